"""The values every layer of signoff passes around.

They are frozen, keyword-only dataclasses: a `ToolCall` proposed by a model, the `Verdict` a
policy gives it, the `Decision` a person takes, and the `Grant` an "approve always" leaves behind.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Final, Literal, TypeAlias

from signoff.errors import InvalidArgumentsError
from signoff.names import same_person

__all__ = [
    "DECIDED_STATUS",
    "KEPT_CHANGES",
    "Approval",
    "ApprovalStatus",
    "Approve",
    "ArgChange",
    "Assignment",
    "AuditEntry",
    "CallKind",
    "Cancelled",
    "Change",
    "ChangeKind",
    "Context",
    "Decision",
    "Edit",
    "Escalation",
    "Expired",
    "Grant",
    "OnTimeout",
    "Preview",
    "PreviewKind",
    "Quorum",
    "Reject",
    "Respond",
    "Scope",
    "ScopeKind",
    "ToolCall",
    "Verdict",
    "VerdictKind",
    "Vote",
    "approval_to_dict",
    "call_json",
    "canonical_json",
    "change_to_dict",
    "decision_from_dict",
    "decision_to_dict",
    "grant_to_dict",
    "preview_from_dict",
    "preview_to_dict",
]

VerdictKind: TypeAlias = Literal["allow", "ask", "deny"]
CallKind: TypeAlias = Literal["tool", "resource", "prompt"]
"""What a call asks for: a tool run, an MCP resource read (its name is the URI) or an MCP
prompt got (its arguments are the prompt's)."""
ScopeKind: TypeAlias = Literal["run", "thread", "agent", "global"]
ChangeKind: TypeAlias = Literal["edit", "vote", "assign", "escalate", "policy"]
"""What changed a pending approval: an edit of its call, one person's approval of several
needed, its assignment, an escalation step reached, or a new policy's rule for it."""
PreviewKind: TypeAlias = Literal["text", "diff", "table"]


def canonical_json(value: Any) -> bytes:
    """Serialize `value` to one canonical UTF-8 JSON form: sorted keys, no spaces, no NaN.

    Equal values give equal bytes, whatever the order their keys were written in.
    """
    try:
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode()
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError (a lone surrogate) is a ValueError
        raise InvalidArgumentsError(f"value is not representable as JSON: {exc}") from exc
    except RecursionError:
        raise InvalidArgumentsError("value is nested too deep to write down as JSON") from None


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call proposed by a model."""

    id: str
    """The call's id as the model or framework gave it (unique within a model turn)."""
    name: str
    """The tool's name."""
    args: dict[str, Any] = field(default_factory=dict)
    """The arguments. A model can produce anything here; a policy fails closed on non-objects."""
    server: str | None = None
    """The MCP server that provides the tool, when it comes from one."""
    agent: str | None = None
    """The path of the agent that made the call, like ``coordinator/researcher``."""
    kind: CallKind = "tool"
    """A tool call, or (through the MCP gateway) a resource read or a prompt got: the policy
    judges each kind by its own rules."""

    @property
    def digest(self) -> str:
        """sha256 of the canonical JSON of ``[name, args, server]`` (and the kind, when it is
        not a tool): what an approval binds to."""
        return hashlib.sha256(call_json(self)).hexdigest()


def call_json(call: ToolCall) -> bytes:
    """The bytes a call's digest hashes: the canonical JSON of ``[name, args, server]``, with
    the kind after them when it is not ``tool`` (a tool call's digest is as it always was)."""
    if call.kind == "tool":
        return canonical_json([call.name, call.args, call.server])
    return canonical_json([call.name, call.args, call.server, call.kind])


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """What the policy says about one call."""

    kind: VerdictKind
    """``allow`` runs the call, ``ask`` holds it for a person, ``deny`` blocks it."""
    rule: str | None
    """The id of the rule that decided, or None when the policy's default did."""
    reason: str
    """Why, in words a person can read in an inbox or an audit log."""
    timeout: float | None = None
    """Seconds a held call waits before it expires; None waits for ever."""
    approvers: tuple[str, ...] = ()
    """Roles allowed to decide a held call; empty means anyone who may decide."""
    forbid_self_approval: bool = False
    """When true, the principal that started the run may not decide its calls."""
    destructive: bool = False
    """When true, the rule marks the call as one that cannot be undone: a person confirms
    before approving it."""
    rule_digest: str | None = None
    """A hash of what the deciding rule (or default) says, wherever it stands: a grant left
    under an asked call binds to it, so an edited or replaced rule never inherits the grant."""
    quorum: Quorum | None = None
    """How many people must approve a held call, when more than one."""
    escalate: tuple[Escalation, ...] = ()
    """Who else may decide a held call, and is told, as time passes without a decision."""
    on_timeout: OnTimeout | None = None
    """The decision signoff takes itself when nobody decides within `timeout`; None lets the
    call expire."""


@dataclass(frozen=True, kw_only=True)
class Quorum:
    """A held call runs only once `count` distinct people have approved it, none of them its
    requester, and among them one person with each of `roles` (a role listed twice needs two)."""

    count: int
    roles: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Vote:
    """One person's approval of a call that needs several (`Quorum`)."""

    by: str
    roles: tuple[str, ...] = ()
    """The roles they decided with."""
    at: datetime


@dataclass(frozen=True, kw_only=True)
class Escalation:
    """`after` seconds from the request with no decision, people with the roles `to` may
    decide the call too, and are told."""

    after: float
    to: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class OnTimeout:
    """What signoff decides itself when nobody decides in time: approve the call, or reject it
    with `reason` (what the model is told)."""

    decide: Literal["approve", "reject"]
    reason: str | None = None
    despite_approvers: bool = False
    """Approve even though the rule names who may decide (approvers, more than one person, or
    no self-approval): said explicitly, or the policy refuses the rule."""


@dataclass(frozen=True, kw_only=True)
class Assignment:
    """An approval handed to a person, or to everyone with a role (`to` is ``role:NAME``),
    by someone who may decide it, with a note."""

    to: str
    by: str
    note: str = ""
    at: datetime

    @property
    def role(self) -> str | None:
        """The role it is assigned to, or None when it is assigned to a person."""
        return self.to.removeprefix("role:") if self.to.startswith("role:") else None


@dataclass(frozen=True, kw_only=True)
class ArgChange:
    """One argument an edit changed: where, and its value before and after (long values cut;
    absent when the edit added or removed it)."""

    path: tuple[str, ...]
    """The keys (and list indices) down to the value."""
    before: Any = None
    after: Any = None
    added: bool = False
    """It was not there before the edit."""
    removed: bool = False
    """The edit took it away."""


@dataclass(frozen=True, kw_only=True)
class Change:
    """What made a pending approval's `version` what it is: each change while it waits is one
    version, so a decision sent on an older version can be told what it did not see."""

    version: int
    """The version this change made."""
    kind: ChangeKind
    by: str
    """Who made it: a person, or ``signoff`` (an escalation, a new policy)."""
    at: datetime
    args: tuple[ArgChange, ...] = ()
    """For an edit: the arguments it changed (the first of them, when it changed many)."""
    more: int = 0
    """For an edit: how many more arguments it changed than `args` keeps."""
    note: str = ""
    """For an assignment, to whom; for an escalation, who may decide now; for a new policy,
    what its rule says now."""


@dataclass(frozen=True, kw_only=True)
class Scope:
    """How far an "approve always" reaches."""

    kind: ScopeKind
    """``run``, ``thread``, ``agent`` (the calling agent's path) or ``global``."""
    with_args: bool = True
    """Cover only calls with exactly the approved arguments (the default). False widens the
    grant to the tool's calls with any arguments: a choice to make on purpose."""


@dataclass(frozen=True, kw_only=True)
class Approve:
    """Run the call as proposed, once, or always within a scope."""

    kind: Literal["approve"] = field(default="approve", init=False)
    always: Scope | None = None
    """When set, later calls of the same agent's tool within the scope run without asking —
    with the same arguments unless the scope widens it to any (never past a deny)."""


@dataclass(frozen=True, kw_only=True)
class Edit:
    """Run the call with these arguments instead."""

    kind: Literal["edit"] = field(default="edit", init=False)
    args: dict[str, Any]
    """The replacement arguments, validated against the tool's schema and re-checked by policy."""


@dataclass(frozen=True, kw_only=True)
class Respond:
    """Do not run the call; give the agent this text as its result."""

    kind: Literal["respond"] = field(default="respond", init=False)
    content: str
    """The tool result the model will see."""


@dataclass(frozen=True, kw_only=True)
class Reject:
    """Do not run the call; tell the agent why and not to retry."""

    kind: Literal["reject"] = field(default="reject", init=False)
    reason: str = ""
    """Shown to the model in the rejection result and kept in the audit log."""


@dataclass(frozen=True, kw_only=True)
class Expired:
    """The approval's timeout passed before anyone decided; the call never runs."""

    kind: Literal["expired"] = field(default="expired", init=False)


@dataclass(frozen=True, kw_only=True)
class Cancelled:
    """The run was cancelled while the call waited; the call never runs."""

    kind: Literal["cancelled"] = field(default="cancelled", init=False)
    reason: str = ""


Decision: TypeAlias = Approve | Edit | Respond | Reject | Expired | Cancelled

ApprovalStatus: TypeAlias = Literal[
    "pending", "approved", "edited", "responded", "rejected", "expired", "cancelled"
]
DECIDED_STATUS: Final[dict[str, ApprovalStatus]] = {
    "approve": "approved",
    "edit": "edited",
    "respond": "responded",
    "reject": "rejected",
    "expired": "expired",
    "cancelled": "cancelled",
}
"""The status an approval takes for each decision kind."""

KEPT_CHANGES: Final = 50
"""The most changes an approval keeps (`Approval.changes`): the oldest go first."""

AUTOMATIC: Final = "signoff"
"""Who decided an approval that signoff decided itself: an expiry, a decision on timeout."""


def decision_to_dict(decision: Decision) -> dict[str, Any]:
    """The decision as JSON-ready data, tagged by ``kind``."""
    match decision:
        case Approve(always=None):
            return {"kind": "approve"}
        case Approve(always=scope):
            assert scope is not None  # matched by the case above otherwise
            return {
                "kind": "approve",
                "always": {"scope": scope.kind, "with_args": scope.with_args},
            }
        case Edit(args=args):
            return {"kind": "edit", "args": args}
        case Respond(content=content):
            return {"kind": "respond", "content": content}
        case Reject(reason=reason):
            return {"kind": "reject", "reason": reason}
        case Expired():
            return {"kind": "expired"}
        case Cancelled(reason=reason):
            return {"kind": "cancelled", "reason": reason}


def decision_from_dict(data: dict[str, Any]) -> Decision:
    """The inverse of `decision_to_dict`, for data this package stored itself."""
    match data["kind"]:
        case "approve":
            always = data.get("always")
            scope = (
                None
                if always is None
                else Scope(kind=always["scope"], with_args=always["with_args"])
            )
            return Approve(always=scope)
        case "edit":
            return Edit(args=data["args"])
        case "respond":
            return Respond(content=data["content"])
        case "reject":
            return Reject(reason=data["reason"])
        case "expired":
            return Expired()
        case "cancelled":
            return Cancelled(reason=data["reason"])
    raise ValueError(f"unknown decision kind {data['kind']!r}")


@dataclass(frozen=True, kw_only=True)
class Preview:
    """What a held call would change, computed without running it by its tool's preview."""

    kind: PreviewKind = "text"
    """How to show `body`: plain ``text``, a unified ``diff``, or a ``table`` of rows."""
    body: str | list[dict[str, Any]] = ""
    """The text or diff, or (a table) a list of rows, each a dict of column to value."""
    truncated: bool = False
    """Whether `body` was cut to the preview's size bound."""
    error: str | None = None
    """Why there is no preview: it failed, or took longer than its time bound."""


def preview_to_dict(preview: Preview) -> dict[str, Any]:
    """The preview as JSON-ready data, as it is stored and as the API shows it."""
    return {
        "kind": preview.kind,
        "body": preview.body,
        "truncated": preview.truncated,
        "error": preview.error,
    }


def preview_from_dict(data: dict[str, Any]) -> Preview:
    """The inverse of `preview_to_dict`, for data this package stored itself."""
    return Preview(
        kind=data["kind"], body=data["body"], truncated=data["truncated"], error=data["error"]
    )


@dataclass(frozen=True, kw_only=True)
class Approval:
    """A held call waiting for, or carrying, a person's decision."""

    id: str
    call: ToolCall
    batch_id: str
    """The held calls of one model turn share a batch: the run resumes when all are decided."""
    run_id: str | None = None
    thread_id: str | None = None
    origin: str = "gate"
    """Who holds the call: ``gate`` (in-process), ``runtime``, ``mcp-gateway``, ..."""
    rule: str | None
    rule_digest: str | None = None
    """What the rule that asked said when it asked (see `Verdict.rule_digest`)."""
    reason: str
    status: ApprovalStatus = "pending"
    requested_at: datetime
    requested_by: str | None = None
    """The principal that started the run, for rules that forbid self-approval."""
    expires_at: datetime | None = None
    approvers: tuple[str, ...] = ()
    forbid_self_approval: bool = False
    destructive: bool = False
    """Whether the rule that asked marks the call as one that cannot be undone
    (`Verdict.destructive`)."""
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision: Decision | None = None
    requested_args: dict[str, Any] | None = None
    """The arguments the call was requested with, when an edit replaced them in `call`; None
    when `call` runs as requested."""
    version: int = 1
    """Bumped by every change; a decision is a compare-and-set on it."""
    args_schema: dict[str, Any] | None = None
    """The JSON schema of the tool's arguments as the asker knew it when the call was held (a
    framework's tool, an MCP server's tool): an edit is checked against it wherever it is
    decided — the inbox of another process too."""
    quorum: Quorum | None = None
    """How many people must approve the call (`Verdict.quorum`); None: one."""
    votes: tuple[Vote, ...] = ()
    """The approvals given so far, when it needs several; an edit starts them again."""
    escalate: tuple[Escalation, ...] = ()
    escalated: int = 0
    """How many of the `escalate` steps have been announced."""
    on_timeout: OnTimeout | None = None
    assigned: Assignment | None = None
    preview: Preview | None = None
    """What the call would change, as its tool's preview computed it when the call was held;
    None when its tool has none."""
    changes: tuple[Change, ...] = ()
    """The changes made while it waited, oldest first (the newest `KEPT_CHANGES` of them):
    each made one version."""
    policy: str | None = None
    """The version of the policy that judged it (and ruled it since): a new version of the
    same policy — one saved in the store — judges it again; None before signoff kept it."""

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    @property
    def next_escalation(self) -> datetime | None:
        """When the next escalation step not announced yet comes, while it waits."""
        if not self.pending or self.escalated >= len(self.escalate):
            return None
        return self.requested_at + timedelta(seconds=self.escalate[self.escalated].after)

    @property
    def automatic(self) -> bool:
        """Whether signoff decided it itself, when nobody decided in time (`on_timeout`)."""
        return self.decided_by == AUTOMATIC and self.status not in ("pending", "expired")

    @property
    def requested_call(self) -> ToolCall:
        """The call as it was requested, before any edit."""
        if self.requested_args is None:
            return self.call
        return replace(self.call, args=self.requested_args)


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    """One line of the hash-chained audit log, as stored. A row that cannot be shown as signoff
    wrote it (tampered with, or damaged) comes back with `problem` saying why."""

    seq: int
    at: datetime | None
    """When; None when the stored time is not one (see `problem`)."""
    actor: str
    action: str
    """``verdict``, ``decision``, ``grant``, ``grant_use`` (a call a grant let through),
    ``revoke``, ``expire``, ``policy``, ..."""
    subject: str
    """What the entry is about: an approval id, a grant id, a policy version."""
    data: dict[str, Any]
    """The entry's details; empty when the stored data cannot be shown (see `problem`)."""
    prev_hash: str
    hash: str
    problem: str | None = None
    """Why the stored row cannot be shown as written, in words ("its data is not JSON"), or
    None. Whether the log was tampered with is for ``Store.verify_audit`` to say."""


@dataclass(frozen=True, kw_only=True)
class Context:
    """Where a call is evaluated: its run and thread, who asked, and the grants that may let
    it through."""

    run_id: str | None = None
    thread_id: str | None = None
    requested_by: str | None = None
    """The principal that started the run: a grant never covers a call its granter could not
    have approved, their own where the rule forbids self-approval included."""
    grants: tuple[Grant, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Grant:
    """A standing approval left by ``Approve(always=Scope(...))``. Never overrides a deny.

    It covers calls of one tool of one agent: the tool's name, MCP server and kind, and the
    path of the agent whose call was approved (`agent`) — another agent's tool of the same name
    is another tool. Within that, its scope:

    - ``run``, ``thread``: that run or thread, and only calls requested by the principal who
      requested the approved call (`requested_by`). A thread id is shown to everyone who reads
      the inbox, and anyone may start a run on it: a grant made for olga's thread must not run
      eve's calls there. A call whose requester is unknown is never covered, and a grant is
      never made for an approval that names no requester.
    - ``agent``: the agent's calls in any run or thread, whoever requests them.
    - ``global``: bound to the agent too, so for an agent's calls it reaches as far as
      ``agent``; it is the scope for calls that name no agent (a library's own calls).

    It covers only calls with the approved arguments, unless it was widened on purpose to any
    (`args_digest` None). And only calls its granter could approve now: under the rule it was
    given under, unchanged; with one of the roles that rule needs — the roles the gate's
    directory of principals gives the granter at the moment of use (a granter it no longer
    knows covers nothing), or, for a gate without one (a library's), the roles stored here;
    and never the granter's own call where the rule forbids self-approval.
    """

    id: str
    tool: str
    """The exact tool name the grant covers (the URI of a resource, the name of a prompt)."""
    server: str | None = None
    """The MCP server of the tool, when it came from one."""
    kind: CallKind = "tool"
    """What it covers: calls of that tool, reads of that resource, or gets of that prompt."""
    agent: str | None = None
    """The path of the agent whose call was approved: only that agent's calls are covered."""
    scope: ScopeKind
    subject: str | None = None
    """What the scope is bound to: the run id, the thread id or the agent path; None if global."""
    requested_by: str | None = None
    """Who requested the approved call: a run or thread grant covers only their calls."""
    args_digest: str | None = None
    """When set, only a call with this digest is covered (``Scope.with_args``, the default)."""
    rule: str | None = None
    """The id of the rule that asked when it was granted: the grant covers only calls that
    rule asks about, so it never carries an approval past a stricter rule's approvers."""
    rule_digest: str | None = None
    """What that rule said (`Verdict.rule_digest`): once the rule is edited or another takes
    its place — its id may be only its position — the grant covers nothing. None on grants made
    before signoff kept it: they cover nothing either."""
    approval_id: str | None = None
    """The approval whose decision left this grant."""
    created_by: str
    roles: tuple[str, ...] = ()
    """The granter's roles when they granted. A gate with a directory of principals judges
    the grant by the roles the granter has at the moment of use instead."""
    created_at: datetime
    uses: int = 0
    """How many calls it let through (each also an audit entry, ``grant_use``)."""
    last_used_at: datetime | None = None
    revoked_by: str | None = None
    revoked_at: datetime | None = None

    def covers(self, call: ToolCall, context: Context) -> bool:
        """Whether this grant's tool, agent, arguments and scope take in `call`, in `context`
        (whether its granter may approve the call is the policy's to say)."""
        if call.name != self.tool or call.server != self.server or call.kind != self.kind:
            return False
        if call.agent != self.agent:
            return False
        if self.args_digest is not None and self.args_digest != call.digest:
            return False
        match self.scope:
            case "global":
                return True
            case "agent":
                return call.agent == self.subject
            case "thread":
                bound = context.thread_id
            case "run":
                bound = context.run_id
        return bound is not None and bound == self.subject and self._requester(context)

    def _requester(self, context: Context) -> bool:
        """Whether the call is requested by the requester of the approved call (one person
        however the name is spelt: `same_person`), both known."""
        return same_person(self.requested_by, context.requested_by)


def approval_to_dict(approval: Approval) -> dict[str, Any]:
    """The approval as JSON-ready data, as the API and every channel show it: `args` are
    those the call runs with, `requested_args` those it was requested with (they differ after
    an edit)."""
    call = approval.call

    def iso(moment: datetime | None) -> str | None:
        return None if moment is None else moment.isoformat()

    return {
        "id": approval.id,
        "run_id": approval.run_id,
        "thread_id": approval.thread_id,
        "call_id": call.id,
        "tool": call.name,
        "kind": call.kind,
        "args": call.args,
        "requested_args": approval.requested_call.args,
        "edited": approval.requested_args is not None,
        "server": call.server,
        "agent": call.agent,
        "status": approval.status,
        "rule": approval.rule,
        "reason": approval.reason,
        "approvers": list(approval.approvers),
        "destructive": approval.destructive,
        "origin": approval.origin,
        "requested_by": approval.requested_by,
        "requested_at": iso(approval.requested_at),
        "expires_at": iso(approval.expires_at),
        "decided_by": approval.decided_by,
        "decided_at": iso(approval.decided_at),
        "decision": None if approval.decision is None else decision_to_dict(approval.decision),
        "automatic": approval.automatic,
        "quorum": None
        if approval.quorum is None
        else {"count": approval.quorum.count, "roles": list(approval.quorum.roles)},
        "votes": [{"by": v.by, "roles": list(v.roles), "at": iso(v.at)} for v in approval.votes],
        "escalate": [{"after": e.after, "to": list(e.to)} for e in approval.escalate],
        "escalated": approval.escalated,
        "on_timeout": None
        if approval.on_timeout is None
        else {"decide": approval.on_timeout.decide, "reason": approval.on_timeout.reason},
        "assigned": None
        if approval.assigned is None
        else {
            "to": approval.assigned.to,
            "by": approval.assigned.by,
            "note": approval.assigned.note,
            "at": iso(approval.assigned.at),
        },
        "preview": None if approval.preview is None else preview_to_dict(approval.preview),
        "version": approval.version,
        "changes": [change_to_dict(c) for c in approval.changes],
    }


def change_to_dict(change: Change) -> dict[str, Any]:
    """A change as JSON-ready data, as it is stored and as the API shows it (the API masks
    the redacted arguments' values)."""
    data: dict[str, Any] = {
        "version": change.version,
        "kind": change.kind,
        "by": change.by,
        "at": change.at.isoformat(),
    }
    if change.args:
        data["edits"] = [
            {"path": list(a.path), "before": a.before, "after": a.after}
            | ({"added": True} if a.added else {})
            | ({"removed": True} if a.removed else {})
            for a in change.args
        ]
    if change.more:
        data["more_edits"] = change.more
    if change.note:
        data["note"] = change.note
    return data


def grant_to_dict(
    grant: Grant, *, in_force: bool = True, inactive: str | None = None
) -> dict[str, Any]:
    """A grant as the API lists it; `in_force` whether the policy still has the rule it was
    given under (else it is ``stale``: it covers nothing); `inactive` why it covers nothing
    now for another reason (its granter is gone, or lacks the roles its rule needs), if so.
    ``why`` says in words why a grant that is not revoked is not active."""
    why = None
    if grant.revoked_at is not None:
        status = "revoked"
    elif not in_force:
        status, why = "stale", "the policy no longer has the rule it was given under"
    elif inactive is not None:
        status, why = "inactive", inactive
    else:
        status = "active"
    return {
        "id": grant.id,
        "tool": grant.tool,
        "kind": grant.kind,
        "server": grant.server,
        "agent": grant.agent,
        "scope": grant.scope,
        "subject": grant.subject,
        "requested_by": grant.requested_by,
        "with_args": grant.args_digest is not None,
        "rule": grant.rule,
        "status": status,
        "why": why,
        "granted_by": grant.created_by,
        "roles": list(grant.roles),
        "granted_at": grant.created_at.isoformat(),
        "approval_id": grant.approval_id,
        "uses": grant.uses,
        "last_used_at": None if grant.last_used_at is None else grant.last_used_at.isoformat(),
        "revoked_by": grant.revoked_by,
        "revoked_at": None if grant.revoked_at is None else grant.revoked_at.isoformat(),
    }
