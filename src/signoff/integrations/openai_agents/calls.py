"""One call of a tool wrapped for signoff in an Agents SDK run: its ``needs_approval`` judges
it, and its ``on_invoke_tool`` runs it once through the ledger as judged and decided — an edit
invoked with the person's arguments, the model told — or answers it."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from agents.tool_context import ToolContext

from signoff.gate.answers import blocked_text, edited_text
from signoff.integrations._calls import Tools, Unrun
from signoff.types import ToolCall

__all__ = ["Calls", "Invoke"]

Invoke = Callable[[ToolContext[Any], str], Awaitable[Any]]


class Calls(Tools):
    """The calls of one `SignoffAgent`'s tools, judged and run once."""

    async def asks(self, thread: str, call: ToolCall, turn: str) -> bool:
        """The tool's ``needs_approval``: judge the call; True when it waits for a person."""
        found = await self.runs.judged(
            [call], thread=thread, requested_by=self.requested_by, turn=turn
        )
        return found[call.id].record.kind == "hold"

    async def execute(
        self,
        thread: str,
        turn: str,
        ctx: ToolContext[Any],
        raw: str,
        proposed: ToolCall,
        schema: dict[str, Any],
        invoke: Invoke,
    ) -> Any:
        """Run one call as it was judged and decided, or answer it."""
        found = await self.runs.held_call(thread, proposed, turn)
        if found is None and self.runs.gate.engine.evaluate(proposed).kind != "allow":
            # The SDK runs it without having asked the tool (an approval given outside signoff,
            # an `on_approval` callback): it runs only where the policy allows it outright.
            return blocked_text("the SDK ran it without signoff's policy asked first")
        step = await self.runs.step_of(
            proposed,
            thread=thread,
            turn=turn,
            requested_by=self.requested_by,
            schema=schema,
            found=found,
        )
        if step.kind == "wait":
            return blocked_text("it waits for a person's decision")
        if step.kind == "answer":
            return step.text
        assert step.call is not None  # a call to run is named
        # The SDK cannot change a call's arguments: an edit is invoked with the person's
        # arguments, and the model is told.
        edited = step.edited
        arguments = raw if edited is None else json.dumps(edited)
        return await self._once(step.key, step.call, ctx, arguments, invoke, edited=edited)

    async def _once(
        self,
        key: str,
        call: ToolCall,
        ctx: ToolContext[Any],
        raw: str,
        invoke: Invoke,
        *,
        edited: dict[str, Any] | None,
    ) -> Any:
        """Invoke the tool once under `key` (its recorded result when it ran); a call signoff
        refuses is answered, never run."""
        result = await self.once(key, call, lambda: invoke(ctx, raw), json=True)
        if isinstance(result, Unrun):
            return result.text
        if edited is None:
            return result
        if isinstance(result, list):  # content parts (an MCP tool's): the note comes first
            note = edited_text(edited, "").rstrip()
            return [{"type": "text", "text": note}, *result]
        return edited_text(edited, result if isinstance(result, str) else json.dumps(result))

    def register(self, path: str, name: str, schema: dict[str, Any]) -> None:
        """Edits of this agent's calls are checked against its tools' schemas when decided."""
        self._schemas.register(name, schema, agent=path)
