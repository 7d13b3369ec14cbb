"""`gated`: one call inside any LangGraph node behind signoff — judged, held with the node's
interrupt, and run once with the arguments decided however often the node re-runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from langgraph.config import get_config

from signoff.errors import CallRefused
from signoff.gate.external import ExternalRuns
from signoff.gate.once import Recorded
from signoff.integrations.langgraph.config import thread_of
from signoff.integrations.langgraph.gate import LangGraphGate
from signoff.integrations.langgraph.interrupt import interrupt_with, pause, take
from signoff.types import ToolCall

__all__ = ["CallResult", "gated"]


@dataclass(frozen=True, kw_only=True)
class CallResult:
    """What became of a call made with `gated`."""

    status: Literal["ran", "responded", "rejected", "blocked", "expired", "cancelled"]
    value: Any = None
    """The function's result when it ran (its recorded result on a re-run)."""
    message: str = ""
    """The person's response, the rejection's reason, or why the call was blocked."""
    args: dict[str, Any] | None = None
    """The arguments it ran with (a person's edit included)."""


def gated(
    runs: ExternalRuns,
    name: str,
    args: dict[str, Any],
    run: Callable[[dict[str, Any]], Any],
    *,
    id: str,
    agent: str | None = None,
    idempotent: bool = False,
) -> CallResult:
    """Call `run(args)` inside a LangGraph node, behind signoff: judged by the policy as tool
    `name`; held calls interrupt the node, and on the re-run after the decision it runs with
    the approved (or edited) arguments — exactly once however often the node re-runs. `id`
    names the call within its node (a node making several calls gives each its own). The
    result must be JSON. Raises `OutcomeUnknown` when a worker died inside the call."""
    config = get_config()
    configurable = config.get("configurable") or {}
    call_id = f"{configurable.get('checkpoint_ns', '')}|{id}"
    call = ToolCall(id=call_id, name=name, args=args, agent=agent)
    thread = thread_of(config)
    while True:
        requested_by = configurable.get("user_id")
        found = runs.run_near(runs.judged([call], thread=thread, requested_by=requested_by))[
            call_id
        ]
        record, approval = found.record, found.approval
        if record.kind == "block":
            return CallResult(status="blocked", message=record.reason)
        if approval is not None and approval.pending:
            gate = LangGraphGate(runs, agent=agent)
            value = interrupt_with(runs.run(pause(gate, [approval], config)))
            runs.run(take(gate, value, [approval], config))
            continue
        if approval is not None and approval.status not in ("approved", "edited"):
            decision = approval.decision
            text = getattr(decision, "content", None) or getattr(decision, "reason", "")
            return CallResult(status=approval.status, message=text)  # type: ignore[arg-type]
        final = approval.call.args if approval is not None else args
        try:
            claim = runs.run_near(
                runs.claim(
                    runs.key(thread, call_id), replace(call, args=final), idempotent=idempotent
                )
            )
        except CallRefused as exc:
            return CallResult(status="blocked", message=str(exc))
        if isinstance(claim, Recorded):
            return CallResult(status="ran", value=claim.value, args=final)
        try:
            value = run(final)
        except BaseException as exc:
            runs.run_near(runs.fail(claim, exc))
            raise
        value = runs.run_near(runs.finish(claim, value))
        if approval is not None:
            runs.run_near(runs.went_on([approval.id]))
        return CallResult(status="ran", value=value, args=final)
