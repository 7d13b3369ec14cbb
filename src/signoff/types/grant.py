"""A standing approval an "approve always" leaves behind, and the context a call is judged in
that says which grants may let it through."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from signoff.names import same_person
from signoff.types.call import CallKind, ToolCall
from signoff.types.decision import ScopeKind

__all__ = ["Context", "Grant", "grant_to_dict"]


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
