"""Strands Agents: an `Agent` with a scripted `Model` and a `FileSessionManager` (one session a
run, in the bench's folder), plain and with signoff's `SignoffHooks`. Its own held path (an
interrupt of its own hook, answered from the kept session) is not measured yet."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from strands import Agent, tool
from strands.models import Model
from strands.session import FileSessionManager

from cases import Case
from frameworks import ARGS, QUESTION, REPLY, Kept, Sides, check, lookup
from signoff.gate.external import ExternalRuns
from signoff.integrations.strands import SignoffHooks


class Scripted(Model):
    """A call of ``lookup``, then `REPLY` once its result is in."""

    def update_config(self, **config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        yield {"messageStart": {"role": "assistant"}}
        if any("toolResult" in b for m in messages for b in m["content"]):
            yield {"contentBlockDelta": {"delta": {"text": REPLY}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        use = {"toolUse": {"toolUseId": uuid.uuid4().hex, "name": "lookup"}}
        yield {"contentBlockStart": {"start": use}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(ARGS["lookup"])}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def strands_sides(kept: Kept, allow: ExternalRuns, ask: ExternalRuns) -> Sides:
    folder = str(kept.path.with_name("strands-sessions"))
    looked = tool(lookup)
    hooks = SignoffHooks(allow)

    def agent(thread: str, *more: Any) -> Agent:
        sessions = FileSessionManager(session_id=thread, storage_dir=folder)
        return Agent(
            model=Scripted(),
            tools=[looked],
            hooks=list(more),
            session_manager=sessions,
            callback_handler=None,
        )

    def said(result: Any) -> str:
        return "".join(b.get("text", "") for b in result.message["content"])

    async def plain_allowed(thread: str) -> None:
        check(said(await agent(thread).invoke_async(QUESTION)), "lookup")

    async def run_allowed(thread: str) -> None:
        check(said(await agent(thread, hooks).invoke_async(QUESTION)), "lookup")

    return Sides("Strands Agents", plain_allowed, run_allowed, None, None, None, None, None, ask)


CASE = Case(
    name="Strands Agents",
    build=strands_sides,
    unmeasured="its own path (an interrupt, the session kept) has no case here yet",
)
