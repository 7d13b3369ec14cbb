"""What one server process runs: the store, the gate, a runner per agent, and their workers.

Every replica on the same database runs the same service: runs are claimed by compare-and-set,
so a run started on one replica can be approved on another and resumes exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeAlias

from signoff.agent import Agent, Runner
from signoff.agent.runner import LEASE
from signoff.errors import (
    ConflictError,
    ForbiddenError,
    InvalidDecisionError,
    InvalidEditError,
    NotFoundError,
)
from signoff.gate import Gate
from signoff.gate.notifier import ANY
from signoff.gate.preview import PREVIEW_SECONDS, Previews, masked
from signoff.notify import Notifications
from signoff.policy import Policy, PolicyEngine
from signoff.protocols.hooks.settings import HookSettings
from signoff.redaction import Redaction
from signoff.server.logs import fields_of
from signoff.store import AuditRecord, Store
from signoff.store.runs import StoredEvent
from signoff.types import Approval, Decision, Edit, Preview

__all__ = ["LOOK_BACK", "UNDO_SECONDS", "EditPreviews", "Principal", "Service"]

LOOK_BACK = timedelta(seconds=2)
"""How far behind its newest event a reader of every run's events looks again."""
UNDO_SECONDS = 5
"""How long the web inbox holds an approval or a rejection back, undoable, by default."""
PAGE = 1000
"""How many events a reader of every run's events reads at a time."""
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC) + LOOK_BACK

logger = logging.getLogger(__name__)

EditPreviews: TypeAlias = Callable[[Approval], Previews | None]
"""The previews that can show an approval's call with edited arguments, or None."""


@dataclass(frozen=True, kw_only=True)
class Principal:
    """Who a request comes from: the decider of whatever it decides."""

    name: str
    roles: frozenset[str] = frozenset()


@dataclass(kw_only=True)
class Service:
    store: Store
    gate: Gate
    agents: Sequence[Agent]
    policy_document: dict[str, Any] | None = None
    """The policy as written (a file's data): what editing through the API changes. Without
    it the policy cannot be edited."""
    poll_interval: float = 0.25
    """How often readers of a run's log look for new events when nothing woke them."""
    policy_interval: float = 2.0
    """How often a replica looks for a policy changed through another one."""
    redaction: Redaction = field(default_factory=Redaction)
    """Arguments masked in everything the API sends (the config's ``redact:``)."""
    notifications: Notifications | None = None
    """Who is told of requests and decisions (the config's ``notify:``), while it runs."""
    undo_seconds: int = UNDO_SECONDS
    """How long the web inbox holds an approval or a rejection back, undoable, before it sends
    it (the config's ``web.undo_seconds``)."""
    preview_timeout: float = PREVIEW_SECONDS
    """How long a preview of one of the agents' tools may take (`Tool.preview`)."""
    run_lease: timedelta = LEASE
    """How long this replica holds a run without renewing it (the config's ``runs.lease``)."""
    hooks: HookSettings = field(default_factory=HookSettings)
    """How coding agents' hooks wait for decisions (the config's ``hooks:``)."""
    edit_previews: list[EditPreviews] = field(default_factory=list)
    """Where else this process can preview an edited call: an MCP gateway running in it
    (`Gateway.edit_previews`). Its own agents' tools it previews itself."""
    policy_lock: asyncio.Lock = field(init=False, default_factory=asyncio.Lock)
    """Held while a change to the policy document is read, made and saved."""
    runners: dict[str, Runner] = field(init=False)
    _tasks: set[asyncio.Task[None]] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        names = [a.name for a in self.agents]
        if len(set(names)) != len(names):
            raise ValueError(f"two agents share a name: {names}")
        self.runners = {
            a.name: Runner(
                a,
                self.gate,
                lease=self.run_lease,
                preview_timeout=self.preview_timeout,
                redaction=self.redaction,
            )
            for a in self.agents
        }
        # The server's gate follows the policy saved last, whichever replica saved it, and
        # words what it refuses with this server's arguments masked.
        self.gate.adopt_policy = self._adopt
        if not self.gate.redaction:
            self.gate.redaction = self.redaction

    async def decide(
        self,
        approval_id: str,
        decision: Decision,
        *,
        actor: str,
        roles: Iterable[str],
        version: int | None = None,
    ) -> Approval:
        """`Gate.decide`, for a decision from outside: an edit's masks put back first, and an
        edit the schema refuses reported without the redacted values it holds."""
        decision = await self._unmasked(approval_id, decision)
        try:
            decided = await self.gate.decide(
                approval_id, decision, actor=actor, roles=roles, version=version
            )
        except InvalidEditError as exc:
            raise self._hidden(exc, [decision]) from None
        logger.info("%s: %s by %s", decided.id, decided.status, actor, extra=fields_of(decided))
        return decided

    async def decide_batch(
        self,
        decisions: Mapping[str, Decision],
        *,
        actor: str,
        roles: Iterable[str],
        versions: Mapping[str, int] | None = None,
    ) -> list[Approval]:
        """`Gate.decide_batch`, as `decide` takes one."""
        unmasked = {i: await self._unmasked(i, d) for i, d in decisions.items()}
        try:
            decided = await self.gate.decide_batch(
                unmasked, actor=actor, roles=roles, versions=versions
            )
        except InvalidEditError as exc:
            raise self._hidden(exc, list(unmasked.values())) from None
        for one in decided:
            logger.info("%s: %s by %s", one.id, one.status, actor, extra=fields_of(one))
        return decided

    async def _unmasked(self, approval_id: str, decision: Decision) -> Decision:
        """The decision with each redacted value an edit left masked put back as it was."""
        if not isinstance(decision, Edit) or not self.redaction:
            return decision
        approval = await self.store.get_approval(approval_id)
        try:
            return Edit(args=self.redaction.restore(decision.args, approval.call.args))
        except ValueError as exc:
            raise InvalidDecisionError(str(exc)) from None

    def _hidden(self, error: InvalidEditError, decisions: list[Decision]) -> InvalidEditError:
        """The error, or — when the value it names holds a redacted one, or lies in one —
        the same error without the value (a schema's message quotes it)."""
        where = () if error.path in ("", "/") else tuple(error.path.split("/")[1:])
        for decision in decisions:
            if not isinstance(decision, Edit):
                continue
            for secret in self.redaction.secrets(decision.args):
                shorter = min(len(secret), len(where))
                if secret[:shorter] == where[:shorter]:
                    return InvalidEditError(
                        "the value there does not fit the tool's schema (not shown: it holds "
                        "a redacted value)",
                        path=error.path,
                        schema_path=error.schema_path,
                    )
        return error

    def previews_for(self, approval: Approval) -> Previews | None:
        """The previews that can show what `approval`'s call would change with other
        arguments, in this process: its tool is one of this server's agents' (or an MCP
        gateway's running here) and has a preview. None: the tool lives elsewhere (another
        framework's app, a gateway of its own)."""
        call = approval.call
        if approval.origin == "runtime" and call.agent:
            root, *path = call.agent.split("/")
            runner = self.runners.get(root)
            agent = None if runner is None else runner.agent
            for name in path:
                agent = None if agent is None else agent.subagent(name)
            if runner is not None and agent is not None:
                previews = runner.previews(agent)
                return previews if previews.covers(call) else None
        for edit_previews in self.edit_previews:
            found = edit_previews(approval)
            if found is not None and found.covers(call):
                return found
        return None

    async def preview_edit(
        self, approval_id: str, args: dict[str, Any], *, actor: str, roles: Iterable[str]
    ) -> Preview:
        """What the pending approval's call would change with `args` (an edit not yet sent),
        for someone who may decide it: `ConflictError` when nothing here can preview it."""
        approval = await self.store.get_approval(approval_id)
        if not self.gate.may_decide(approval, actor=actor, roles=roles):
            raise ForbiddenError(f"{actor!r} may not decide approval {approval_id!r}")
        if not approval.pending:
            raise ConflictError(f"approval {approval_id!r} is {approval.status} already")
        previews = self.previews_for(approval)
        if previews is None:
            raise ConflictError(
                f"no preview of edited arguments here: {approval.call.name!r} has none this "
                "server can compute (its tool lives in another process)"
            )
        edit = await self._unmasked(approval_id, Edit(args=args))
        assert isinstance(edit, Edit)  # an edit stays one
        problem = self.gate.limits.problem(edit.args)
        if problem is not None:
            raise InvalidDecisionError(f"args: {problem}")
        verdict = self.gate.engine.evaluate(replace(approval.call, args=edit.args))
        if verdict.kind == "deny":
            return Preview(error=f"not previewed: the policy denies the edited call: "
                                 f"{verdict.reason}")  # fmt: skip
        found = await previews.of(approval.call, edit.args) or Preview(error="no preview")
        # An MCP gateway's previews know no redaction: masked here, as the card is.
        return masked(found, self.redaction, approval.call.args, edit.args)

    def runner(self, agent: str) -> Runner:
        try:
            return self.runners[agent]
        except KeyError:
            raise NotFoundError(
                f"no agent named {agent!r}; the agents are {sorted(self.runners)}"
            ) from None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Service]:
        """Run the workers (one per agent, resuming decided runs), the expiry sweeper and the
        notifications for as long as the block lasts."""
        await self._adopt_policy()
        workers = [asyncio.create_task(r.work()) for r in self.runners.values()]
        workers.append(asyncio.create_task(self.gate.run_sweeper()))
        workers.append(asyncio.create_task(self._follow_policy()))
        try:
            async with (
                self.notifications.running()
                if self.notifications is not None
                else contextlib.nullcontext()
            ):
                yield self
        finally:
            for task in [*workers, *self._tasks]:
                task.cancel()
            await asyncio.gather(*workers, *self._tasks, return_exceptions=True)

    async def set_policy(
        self, document: dict[str, Any], *, actor: str, replaces: str | None = None
    ) -> Policy:
        """Put `document` in force as a new policy version, audited, on every replica (each
        picks it up within `policy_interval`). Raises `PolicyError` naming every mistake, and
        with `replaces`, `ConflictError` unless that is still the latest saved version."""
        policy = Policy.from_dict(document, source="the policy document")
        now = await self.gate.time()  # what orders the versions saved: one clock for all
        previous = self.gate.engine.version
        record = AuditRecord(
            actor=actor, action="policy", subject=policy.version,
            data={"previous": previous}, at=now,
        )  # fmt: skip
        await self.store.save_policy(
            policy.version, document, actor=actor, at=now, audit=[record], replaces=replaces
        )
        self._install(policy, document)
        await self.gate.rejudge()
        return policy

    def _install(self, policy: Policy, document: dict[str, Any]) -> None:
        self.gate.engine = PolicyEngine(policy)
        self.policy_document = document

    async def _adopt_policy(self) -> None:
        """On start: a policy document never saved before (a new or changed config file) is put
        in force; otherwise the latest saved one (edits made through the API) stays."""
        if self.policy_document is not None and not await self.store.known_policy(
            self.gate.engine.version
        ):
            await self.set_policy(self.policy_document, actor="config")
            return
        await self._load_latest()

    async def _load_latest(self) -> None:
        """Put the policy saved last in force here, if it is not, and judge the waiting calls
        by it (every replica does as it reads it: what one changed, the others find done)."""
        # Under the lock a change through the API holds: a version read before that change
        # was saved is never installed over it.
        async with self.policy_lock:
            latest = await self.store.latest_policy()
            if latest is not None and latest[0] != self.gate.engine.version:
                version, document = latest
                policy = Policy.from_dict(document, source=f"policy version {version}")
                self._install(policy, document)
                await self.gate.rejudge()

    async def _adopt(self) -> None:
        """The gate's `adopt_policy`: before a judgement that must be by the policy of now (a
        decision that found a newer one saved, a lapse, an approved call about to run), read
        the policy saved last — its version first, the whole of it only when it is new here."""
        if await self.store.latest_policy_version() not in (None, self.gate.engine.version):
            await self._load_latest()

    async def _follow_policy(self) -> None:
        while True:
            await asyncio.sleep(self.policy_interval)
            try:
                await self._load_latest()
            except Exception:
                logger.exception("reading the latest policy failed; trying again")

    async def start_run(
        self,
        agent: str,
        thread_id: str,
        input: str,
        *,
        started_by: str,
        wait: float = 0,
        run_id: str | None = None,
    ) -> str:
        """Start a run (named `run_id`, or a new id) and let it go on in the background; return
        its id once it is stored. With `wait`, return when it pauses or ends, or after `wait`
        seconds. A run id taken already is a `ConflictError`."""
        stream = self.runner(agent).start(thread_id, input, started_by=started_by, run_id=run_id)
        first = await anext(stream)
        done = asyncio.Event()

        async def go_on() -> None:
            try:
                async for event in stream:
                    self.gate.notifier.notify(event.run_id)  # wake this process's readers
            except ConflictError:
                pass  # another worker took it over: it goes on there
            except Exception:
                logger.exception("run %s failed in the background", first.run_id)
            finally:
                done.set()

        task = asyncio.create_task(go_on())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if wait > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await done.wait()
        return first.run_id

    async def follow_all(
        self,
        *,
        since: datetime | None = None,
        after: tuple[datetime, str, int] | None = None,
    ) -> AsyncIterator[StoredEvent]:
        """Every run's events from `since` (default: from now on), as they are written, until
        cancelled; with `after` (time, run id, number: a reader's last event), only those that
        come after it. Each read looks back `LOOK_BACK` behind the newest event sent, because
        writers' clocks and commit order do not quite agree, and skips what it sent already:
        nothing is lost nor sent twice."""
        cursor = max(since or self.store.now(), _EARLIEST)  # the clock the runs' events are by
        sent: dict[tuple[str, int], datetime] = {}
        with self.gate.notifier.subscription(ANY) as woken:
            while True:
                woken.clear()
                page: tuple[datetime, str, int] | None = None
                while True:  # every page since the look-back, however many were written
                    events = await self.store.events_since(
                        cursor - LOOK_BACK, after=page, limit=PAGE
                    )
                    for event in events:
                        key = (event.run_id, event.seq)
                        page = (event.at, *key)
                        if key in sent or (after is not None and page <= after):
                            continue
                        sent[key] = event.at
                        cursor = max(cursor, event.at)
                        yield event
                    if len(events) < PAGE:
                        break
                horizon = cursor - LOOK_BACK
                sent = {k: at for k, at in sent.items() if at >= horizon}
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.poll_interval):
                        await woken.wait()

    async def follow(self, run_id: str, *, after: int = 0) -> AsyncIterator[StoredEvent]:
        """The run's events after `after`, then each new one as it is written, until the run
        has ended and every event was sent. Decisions taken in this process wake it at once;
        otherwise it looks every `poll_interval` seconds."""
        await self.store.get_run(run_id)  # NotFoundError before anything is streamed
        with self.gate.notifier.subscription(ANY) as woken:
            while True:
                woken.clear()
                # The status first: a run that ends after it was read still gets its events
                # read, and the stream ends on the next round.
                ended = (await self.store.get_run(run_id)).status in ("completed", "failed")
                events = await self.store.run_events(run_id, after=after)
                for event in events:
                    after = event.seq
                    yield event
                if not events and ended:
                    return
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.poll_interval):
                        await woken.wait()
