"""What every part of the Gate stands on: the policy in force (and the versions of it the gate
judged by, and how it catches up with the one the store saved last), the store, the clock, the
notifier that wakes waiters, the limits on arguments, the tool schemas edits are checked against
and the directory of principals. Judging, holding, deciding and waiting (`signoff.gate.core`)
are built on it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from signoff.errors import ForbiddenError, InvalidDecisionError
from signoff.gate.deciders import approvers_at, check_approval_decider
from signoff.gate.edits import SchemaLookup
from signoff.gate.notifier import Notifier
from signoff.gate.outcome import approval_context
from signoff.gate.schemas import ToolSchemas
from signoff.limits import ArgumentLimits
from signoff.policy import Policy, PolicyEngine
from signoff.redaction import Redaction
from signoff.store import Store
from signoff.types import Approval, Context, ToolCall

__all__ = ["ADOPTIONS", "AdoptPolicy", "GateBase", "RolesOf", "saved_policy"]

RolesOf = Callable[[str], frozenset[str] | None]
"""A directory of principals: the roles a principal has now, or None when it is not (or no
longer) known. The server builds one from its tokens."""
AdoptPolicy = Callable[[], Awaitable[None]]
"""Put in force the policy the store saved last, if it is not: a gate that follows the store's
policy (a server's) is given one, and judges decisions, lapses and what runs by that policy."""
ADOPTIONS: Final = 5
"""How many times a decision is judged again after its replica read a newer policy (and a
waiting call after it changed meanwhile)."""


class GateBase:
    """The Gate's state, its policy in force and its clock (the Gate is one)."""

    def __init__(
        self,
        policy: Policy | PolicyEngine,
        store: Store,
        *,
        schemas: SchemaLookup | Mapping[str, Mapping[str, Any]] | None = None,
        notifier: Notifier | None = None,
        clock: Callable[[], datetime] | None = None,
        poll_interval: float = 0.5,
        limits: ArgumentLimits | None = None,
        roles_of: RolesOf | None = None,
        redaction: Redaction | None = None,
        adopt_policy: AdoptPolicy | None = None,
    ) -> None:
        self._judged_by: set[str] = set()
        self.engine = policy if isinstance(policy, PolicyEngine) else PolicyEngine(policy)
        self.store = store
        self.redaction = redaction or Redaction()
        """The arguments never shown (the config's ``redact:``): masked in what the gate
        words itself — a refused decision naming an edit's values."""
        self.adopt_policy = adopt_policy
        """How this gate reads the policy the store saved last, when it follows the store's
        (a server's gate); None: its policy is the one it was given (a library's)."""
        self.roles_of = roles_of
        """Who the principals are now: a grant is judged by its granter's roles at the moment
        of use, and one whose granter is unknown lets nothing through. None (a library's gate)
        judges each grant by the roles it stores, those its granter had when granting."""
        self.principals_from = ""
        """Where the principals `roles_of` knows come from, in words (a server's: its config's
        tokens), said when a call is handed to a name that is none of them."""
        self.limits = limits or ArgumentLimits()
        """How deep and big a call's arguments (and an edit's) may be: a call past them is
        blocked, an edit past them refused."""
        self.notifier = notifier or Notifier()
        self._schemas = ToolSchemas(schemas)
        self._now = clock or (lambda: datetime.now(UTC))
        self._clock_given = clock is not None
        # Without cross-process notifications a waiter polls; with them, polling is a safety net.
        self._poll = (
            poll_interval if not store.notifies_across_processes else max(poll_interval, 5.0)
        )
        self._listening = False

    @property
    def engine(self) -> PolicyEngine:
        """The policy this gate judges by now (set it, or `use_policy`, to change it)."""
        return self._engine

    @engine.setter
    def engine(self, engine: PolicyEngine) -> None:
        self._engine = engine
        self._judged_by.add(engine.version)

    def judged_by(self, approval: Approval, *, saved: bool = False) -> bool:
        """Whether a version of this gate's policy judged `approval`: one it judged by itself,
        or (`saved`) one saved in the store, a server's lineage. Only then does a new version
        rule it — another policy's approvals (a framework app's own) keep their rule."""
        return saved or (approval.policy is not None and approval.policy in self._judged_by)

    async def catch_up(self) -> None:
        """Read the policy the store saved last, when this gate follows the store's (a
        server's: `adopt_policy`), before a judgement that must be by the policy of now — an
        approval about to run, a lapse. A library's gate judges by the policy it was given."""
        if self.adopt_policy is not None:
            await self.adopt_policy()

    def denied_now(self, approval: Approval) -> str | None:
        """Why `approval`'s call may not run now although a person (or its rule, on timeout)
        approved it: the policy in force denies it — changed since. Checked where it is
        decided and again where it runs, by every runtime and integration."""
        return self.denied_call(approval.call, approval_context(approval))

    def denied_call(self, call: ToolCall, context: Context | None = None) -> str | None:
        """Why `call` may not run now, whatever let it through before (a verdict to run judged
        earlier, a grant, an approval): the policy in force denies it."""
        verdict = self.engine.evaluate(call, context)
        if verdict.kind == "deny":
            return f"the policy in force denies this call now ({verdict.reason})"
        return None

    def idempotent(self, call: ToolCall, context: Context | None = None) -> bool:
        """Whether the policy in force marks `call` read-only or idempotent (a rule's
        ``idempotent: true``): its claim need not wait for the disk (`Ledger.claim`)."""
        return self.engine.evaluate(call, context).idempotent

    # -- tool schemas ----------------------------------------------------------------------

    def register_schemas(
        self,
        schemas: Mapping[str, Mapping[str, Any]],
        *,
        agent: str | None = None,
        server: str | None = None,
    ) -> None:
        """Tool schemas to check edits against, by tool name: for the calls of the agent at
        path `agent`, or of any agent (a runner registers each of its agents' tools'), to the
        MCP `server` that serves them (two servers may name a tool alike). A held call keeps its
        tool's schema with its approval, so an edit decided in another process is checked too."""
        self._schemas.register(schemas, agent=agent, server=server)

    def tool_schema(self, call: ToolCall) -> Mapping[str, Any] | None:
        """The JSON schema an edit of `call` is checked against, if its tool has one."""
        return self._schemas.of(call)

    def edit_schema(self, approval: Approval) -> Mapping[str, Any] | None:
        """The schema an edit of `approval`'s call is checked against: the one kept with it,
        else the one this gate knows for its tool."""
        return (
            approval.args_schema
            if approval.args_schema is not None
            else self._schemas.of(approval.call)
        )

    # -- the clock -------------------------------------------------------------------------

    async def time(self) -> datetime:
        """What time it is for everything that goes by time — what falls due, escalation,
        when a call was held and until when it waits: the store's clock, one for every replica
        (read seldom: `Store.clock`), or the clock this gate was given."""
        return self._now() if self._clock_given else await self.store.clock()

    def now(self) -> datetime:
        """`time` without waiting for the store: its clock as last read, carried forward
        (`Store.now`)."""
        return self._now() if self._clock_given else self.store.now()

    def _check_assignee(self, approval: Approval, to: str, now: datetime) -> None:
        """`InvalidDecisionError` when `to` (a person, or ``role:NAME``) could not decide
        `approval` as far as is known: a role none of the rule's approvers, a person the
        directory (`roles_of`) does not know, or one who may not decide it. What an approval is
        handed on to, and who a question is asked of, are checked by it."""
        role = to.removeprefix("role:") if to.startswith("role:") else None
        approvers = approvers_at(approval, now)
        if role is not None:
            if approvers and role not in approvers:
                raise InvalidDecisionError(
                    f"role {role!r} may not decide this approval: rule {approval.rule!r} needs "
                    f"one of the roles {list(approvers)!r}"
                )
            return
        if self.roles_of is None:
            return  # no directory: whoever it is must qualify when deciding
        their_roles = self.roles_of(to)
        if their_roles is None:
            known = f": {self.principals_from}" if self.principals_from else ""
            raise InvalidDecisionError(f"{to!r} is not a known principal{known}")
        try:
            check_approval_decider(approval, actor=to, roles=their_roles, now=now)
        except ForbiddenError as exc:
            raise InvalidDecisionError(f"it cannot be assigned to {to!r}: {exc}") from None

    def _at(self, moment: datetime) -> datetime:
        """The time of a judgement made in a transaction that read the database's clock as
        `moment`: that, or the clock this gate was given."""
        return self._now() if self._clock_given else moment


def saved_policy(gate: GateBase) -> AdoptPolicy:
    """An `adopt_policy` for `gate`: put in force the policy the store saved last, when it is
    not the gate's (the version read first; the document only when it is new here). The server
    that saved it judged the waiting calls by it already."""

    async def adopt() -> None:
        version = await gate.store.latest_policy_version()
        if version is None or version == gate.engine.version:
            return
        latest = await gate.store.latest_policy()
        if latest is not None:
            saved, document = latest
            gate.engine = PolicyEngine(Policy.from_dict(document, source=f"policy version {saved}"))

    return adopt
