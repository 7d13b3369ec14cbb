"""Any OpenAI-compatible chat endpoint as a `Model`: OpenAI, vLLM, Ollama, llama.cpp, LiteLLM."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from signoff.agent.model import Message, ModelTurn, ToolSpec, TurnDelta
from signoff.errors import MissingExtraError
from signoff.types import ToolCall

__all__ = ["OpenAIChatModel"]


class OpenAIChatModel:
    """Chat completions with tools, whole or streamed."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Any = None,
        **options: Any,
    ) -> None:
        """`options` go to every request as they are (``temperature=0``, ``max_tokens=...``)."""
        if client is None:
            try:
                from openai import AsyncOpenAI
            except ImportError:
                raise MissingExtraError("OpenAIChatModel", "openai") from None
            # A local server needs no key, but the SDK insists on one.
            client = AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed")
        self.model = model
        self.label = model
        """What the web inbox shows as the agent's model."""
        self.client = client
        self.options = options

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        response = await self.client.chat.completions.create(**self._request(messages, tools))
        message = response.choices[0].message
        calls = tuple(
            _tool_call(c.id, c.function.name, c.function.arguments)
            for c in message.tool_calls or ()
        )
        return ModelTurn(text=message.content or "", tool_calls=calls)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[TurnDelta]:
        """Text as it comes; each tool call once its streamed arguments are complete."""
        chunks = await self.client.chat.completions.create(
            **self._request(messages, tools), stream=True
        )
        pending: dict[int, dict[str, str]] = {}
        async for chunk in chunks:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if delta.content:
                yield TurnDelta(text=delta.content)
            for part in delta.tool_calls or ():
                call = pending.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = part.id or call["id"]
                if part.function is not None:
                    call["name"] += part.function.name or ""
                    call["arguments"] += part.function.arguments or ""
        for index in sorted(pending):
            call = pending[index]
            yield TurnDelta(tool_call=_tool_call(call["id"], call["name"], call["arguments"]))

    def _request(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire(m) for m in messages],
            **self.options,
        }
        if tools:
            request["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
        return request


def _tool_call(call_id: str, name: str, arguments: str) -> ToolCall:
    """Arguments that are not a JSON object are kept as the raw text: the policy fails closed on
    them, and a person sees exactly what the model produced."""
    try:
        args: Any = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        args = arguments
    return ToolCall(id=call_id, name=name, args=args)


def _arguments(call: ToolCall) -> str:
    """Arguments the model wrote as unparsable text go back exactly as it wrote them."""
    args: object = call.args
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def _wire(message: Message) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": _arguments(c)},
            }
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    return wire
