"""The one interrupt of a model turn: while a held call of the turn is undecided, the node records
the pause (with the graph's last messages, for the people who decide) and interrupts with
LangChain's ``HITLRequest`` (Agent Inbox and LangGraph Studio show it); a resume payload sent the
LangChain way is taken as the decisions of whoever sent it. With every call decided the run goes
on past the pause, claimed so that it goes on once (`signoff.integrations._pauses`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from signoff.gate.external import Held
from signoff.integrations._hitl import (
    MARK,
    interrupt_value,
    response_schema,
    resume_decisions,
    transcript_of,
)
from signoff.integrations._pauses import Continuation, acontinuing, continuing
from signoff.integrations.langgraph.config import thread_of
from signoff.integrations.langgraph.gate import LangGraphGate
from signoff.types import Approval

__all__ = ["adecide_turn", "decide_turn", "interrupt_with", "pause", "take"]


def decide_turn(
    gate: LangGraphGate,
    message: AIMessage,
    answered: set[str],
    config: RunnableConfig,
    messages: Sequence[Any] = (),
) -> tuple[dict[str, Held], bool]:
    """Interrupt until every held call of the turn without a result is decided (once, for
    all of them; again only if a resume payload left some undecided). Returns how each call
    without a result stands, and whether the node was resumed from an interrupt here.
    `messages` (the graph's) are kept with the pause, for the people who decide."""
    runs, interrupted = gate.runs, False
    known = _known(gate, message, answered, config)
    if known is not None:
        return known, False
    with continuing(gate.runs) as continuation:
        while True:
            held, turn, asked = runs.run(
                _stand(gate, message, answered, config, continuation, messages)
            )
            if asked is None:
                return held, interrupted
            runs.run(take(gate, interrupt_with(asked), turn, config))
            interrupted = True


async def adecide_turn(
    gate: LangGraphGate,
    message: AIMessage,
    answered: set[str],
    config: RunnableConfig,
    messages: Sequence[Any] = (),
) -> tuple[dict[str, Held], bool]:
    """`decide_turn` for async graphs."""
    interrupted = False
    known = _known(gate, message, answered, config)
    if known is not None:
        return known, False
    async with acontinuing(gate.runs) as continuation:
        while True:
            held, turn, asked = await gate.runs.bridge.arun(
                _stand(gate, message, answered, config, continuation, messages)
            )
            if asked is None:
                return held, interrupted
            await take(gate, interrupt_with(asked), turn, config)
            interrupted = True


async def _stand(
    gate: LangGraphGate,
    message: AIMessage,
    answered: set[str],
    config: RunnableConfig,
    continuation: Continuation,
    messages: Sequence[Any] = (),
) -> tuple[dict[str, Held], list[Approval], dict[str, Any] | None]:
    """How the turn's calls without a result stand, their approvals, and — while some are
    undecided — the pause's interrupt value (on the bridge's loop: one hop for all). With
    every call decided the run goes on past the pause: claimed for `continuation`."""
    turn, held = await _held(gate, message, answered, config)
    pending = [a for a in turn if a.pending]
    if not pending:
        await _went_on(gate, turn, config, continuation)
        return held, turn, None
    return held, turn, await pause(gate, pending, config, messages)


def _known(
    gate: LangGraphGate, message: AIMessage, answered: set[str], config: RunnableConfig
) -> dict[str, Held] | None:
    """How the turn's calls without a result stand, when none was held (`runs.known`)."""
    open_ids = [c["id"] or "" for c in message.tool_calls if c["id"] not in answered]
    return gate.runs.known(thread_of(config), open_ids, turn=message.id)


async def _held(
    gate: LangGraphGate, message: AIMessage, answered: set[str], config: RunnableConfig
) -> tuple[list[Approval], dict[str, Held]]:
    """The approvals of the turn's held calls without a result, in the turn's order, and
    how every call without a result stands."""
    open_ids = [c["id"] or "" for c in message.tool_calls if c["id"] not in answered]
    held = await gate.runs.held(thread_of(config), open_ids, turn=message.id)
    turn = [held[i].approval for i in open_ids if i in held]
    return [a for a in turn if a is not None], held


async def pause(
    gate: LangGraphGate,
    pending: Sequence[Approval],
    config: RunnableConfig,
    messages: Sequence[Any] = (),
) -> dict[str, Any]:
    """Record the pause on the `pending` calls (with the graph's last `messages`) and make
    the interrupt's value: LangChain's ``HITLRequest`` shape (Agent Inbox and LangGraph
    Studio show it), with signoff's part under ``signoff`` (the pause, its approvals and
    the version of each). Re-entered (a re-run node on its way to the resume value), the
    open pause that asked for them stands, with the calls it listed as they are now."""
    configurable, agent = config.get("configurable") or {}, gate.agent_of(config)
    standing = await gate.runs.open_pause([a.id for a in pending])
    if standing is not None and {a.id for a in pending} <= set(standing.data.get("asked", [])):
        asked = await gate.runs.near(gate.runs.store.get_approvals(standing.data["asked"]))
        return interrupt_value(standing.id, asked)
    pause = await gate.runs.pause(
        thread=thread_of(config),
        approvals=[a.id for a in pending],
        data={
            "thread_id": thread_of(config),
            "checkpoint_ns": configurable.get("checkpoint_ns", ""),
            "checkpoint": configurable.get("checkpoint_map"),
            "asked": [a.id for a in pending],
            # Who runs the thread, for the resumer to run it as: the calls of the turns
            # after the resume are theirs too (self-approval, grants of theirs).
            "user_id": gate.requested_by(config),
        },
        agent=agent,
        conversation=transcript_of(messages, agent),
    )
    return interrupt_value(pause.id, pending)


async def take(
    gate: LangGraphGate, value: Any, turn: Sequence[Approval], config: RunnableConfig | None = None
) -> None:
    """Record the decisions a resume payload carries (LangChain's ``{"decisions": [...]}``
    by position in the interrupt that asked, or ``{approval id: decision}``) as whoever
    sent it — the resuming run's ``configurable.user_id`` —, else as the integration's
    principal (none named: not taken); signoff's own resume value carries none. A decision
    that names the ``version`` it was made on is not taken if its call changed since (the
    node then interrupts again, showing the version now). Malformed payloads are refused,
    nothing taken."""
    if isinstance(value, Mapping) and MARK in value:
        return
    pause = await gate.runs.open_pause([a.id for a in turn])
    by_id = {a.id: a for a in turn}
    asked = [by_id[i] for i in (pause.data.get("asked", []) if pause else []) if i in by_id]
    sent = resume_decisions(value, asked or [a for a in turn if a.pending])
    if sent.decisions:
        await gate.runs.decide(
            sent.decisions,
            actor=None if config is None else gate.requested_by(config),
            versions=sent.versions,
        )


async def _went_on(
    gate: LangGraphGate,
    approvals: Sequence[Approval],
    config: RunnableConfig,
    continuation: Continuation,
) -> None:
    """The run goes on past the turn's pause. The step that resumes the checkpoint which
    paused claims the pause: another invocation resuming that checkpoint at once (or late)
    must not go on too — it would call the model again, and run the next turn's calls
    twice. A later step (the middleware's next hook) is on the line that one claim let
    through: the pause is done for good."""
    if not approvals:
        return
    ids = [a.id for a in approvals]
    pause = await gate.runs.store.last_pause(ids)
    checkpoint = (config.get("configurable") or {}).get("checkpoint_map")
    if pause is not None and checkpoint and pause.data.get("checkpoint") == checkpoint:
        await continuation.take(pause)
        return
    await gate.runs.went_on(ids)


def interrupt_with(asked: dict[str, Any]) -> Any:
    """Interrupt the node with `asked`; on resume, the payload (checked by LangGraph first)."""
    return interrupt(asked, response_schema=response_schema(len(asked["action_requests"])))
