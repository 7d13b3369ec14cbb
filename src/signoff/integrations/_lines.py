"""A paused checkpoint goes on along one line of checkpoints, whoever resumes it.

`Continuation` claims a pause in the node that resumes the paused checkpoint. That is not
enough: LangGraph keeps a finished task's writes with the checkpoint it ran from, so a second
invocation that resumes the paused checkpoint after the first one's node returned skips that
node (its writes are there) and goes on from the same checkpoint — to the model, and to the
next turn's calls, whose keys are new. The two invocations write two children of the paused
checkpoint: two lines.

So the first step past the pause that every line takes — the agent's next model call — claims
the pause for the checkpoint it runs from, which is its line's own: a retry of that step runs
from the same checkpoint and passes, another line is refused with `ConflictError` before the
model is called again or any of its calls runs. The claim lasts as long as `Continuation`'s on a
pause it continued (`LEASE`): a resume of the paused checkpoint later than that is LangGraph's
time travel, and goes on as a new line.

`ApprovalToolNode` needs none of this: LangGraph runs a tool node that paused again on a second
resume (tests/integrations/test_langgraph.py), where `Continuation` refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signoff.gate.external import LEASE, Pause
from signoff.integrations._pauses import conflict

__all__ = ["acheck_line", "check_line"]


def check_line(gate: Any, message: Any, config: Mapping[str, Any]) -> None:
    """Refuse (`ConflictError`) a step of a line that forked from the checkpoint where
    `message`'s turn paused, when another line went on from it first; claim the pause for
    this step's line when none did. `gate` is the `LangGraphGate`; `message` the turn before
    the step."""
    if not _unheld(gate, message, config):
        gate.runs.run_near(_claim(gate, message, config))


async def acheck_line(gate: Any, message: Any, config: Mapping[str, Any]) -> None:
    """`check_line` for async graphs."""
    if not _unheld(gate, message, config):
        await gate.runs.near(_claim(gate, message, config))


def _unheld(gate: Any, message: Any, config: Mapping[str, Any]) -> bool:
    """Whether the turn cannot have paused: a graph without threads, or this process saw
    every call of the turn judged and none held — the common case, answered without a hop to
    the store."""
    thread = _thread(config)
    if thread is None:
        return True
    ids = [c["id"] or "" for c in message.tool_calls]
    return gate.runs.known(thread, ids, turn=message.id) is not None


async def _claim(gate: Any, message: Any, config: Mapping[str, Any]) -> None:
    """Claim the pause of the turn's held calls for the checkpoint this step runs from."""
    found = await _fork_of(gate, message, config)
    if found is None:
        return
    pause, current = found
    now = await gate.runs.store.clock()
    name = f"line:{pause.id[:35]}"  # the leases' names are short
    if not await gate.runs.store.lease(name, owner=current, now=now, until=now + LEASE):
        raise conflict(pause, None)


async def _fork_of(gate: Any, message: Any, config: Mapping[str, Any]) -> tuple[Pause, str] | None:
    """The pause of the turn's held calls and the checkpoint this step runs from, when that is
    not the paused one (the paused one's own node is `Continuation`'s); else None."""
    ids = [c["id"] or "" for c in message.tool_calls]
    held = await gate.runs.held(str(_thread(config)), ids, turn=message.id)
    approvals = [h.approval.id for h in held.values() if h.approval is not None]
    pause: Pause | None = await gate.runs.store.last_pause(approvals) if approvals else None
    if pause is None:
        return None
    paused_map = pause.data.get("checkpoint") or {}
    current_map = (config.get("configurable") or {}).get("checkpoint_map") or {}
    # A subgraph's namespace carries its task's id, another on each line: the lines are told
    # apart in the deepest graph around it that both share, once that graph took a step.
    shared = [ns for ns in paused_map if ns in current_map]
    if not shared:
        return None
    paused, current = str(paused_map[shared[-1]]), str(current_map[shared[-1]])
    return None if paused == current else (pause, current)


def _thread(config: Mapping[str, Any]) -> str | None:
    thread = (config.get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)
