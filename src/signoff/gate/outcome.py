"""What the gate says of the calls it judges: where they come from (`CheckContext`) and what
happens to each (`Outcome`) — it runs, it is blocked, or it is held for a person."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from signoff.store.external import ExternalRecord
from signoff.types import Approval, Context, Grant, ToolCall, Verdict

__all__ = [
    "OUTCOME_OF",
    "VERDICT_OF",
    "CheckContext",
    "Outcome",
    "approval_context",
    "policy_context",
]

OutcomeKind = Literal["run", "block", "hold"]

OUTCOME_OF: Final[dict[str, OutcomeKind]] = {"allow": "run", "deny": "block", "ask": "hold"}
"""What happens to a call, by the kind of its verdict."""
VERDICT_OF: Final[dict[str, Literal["allow", "deny", "ask"]]] = {
    "run": "allow",
    "block": "deny",
    "hold": "ask",
}
"""The kind of verdict a call had, by what happened to it (as a kept record says)."""


@dataclass(frozen=True, kw_only=True)
class CheckContext:
    """Where the calls come from."""

    run_id: str | None = None
    thread_id: str | None = None
    requested_by: str | None = None
    """The principal that started the run (for rules that forbid self-approval)."""
    origin: str = "gate"
    turn: str | None = None
    """For another framework's run: the model response the calls came from (a message id, a
    response's timestamp), so a provider that numbers every response's calls ``call_0`` gets
    new calls, while the same response judged again is the same calls."""


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What happens to one call: it runs, it is blocked, or it is held for a person."""

    call: ToolCall
    kind: OutcomeKind
    verdict: Verdict
    approval: Approval | None = None
    """The pending approval, for a held call (decided already, when `recorded`)."""
    recorded: bool = False
    """For a call of another framework's run: it was judged before (a re-run, a retry,
    another replica), and this is that verdict — its approval as it stands now."""
    record: ExternalRecord | None = None
    """For a call of another framework's run: the record its verdict is kept under."""
    written: bool = True
    """False: a verdict to run, left to `hold`'s caller to write (`unwritten`)."""


def policy_context(context: CheckContext, grants: tuple[Grant, ...] = ()) -> Context:
    """What the policy is told of where calls come from: their run, thread and requester, and
    the grants in force for them."""
    return Context(
        run_id=context.run_id,
        thread_id=context.thread_id,
        requested_by=context.requested_by,
        grants=grants,
    )


def approval_context(approval: Approval) -> Context:
    """Where `approval`'s call is judged again: its run, thread and requester."""
    return Context(
        run_id=approval.run_id, thread_id=approval.thread_id, requested_by=approval.requested_by
    )
