"""Test doubles for the LangChain/LangGraph integration tests: a chat model that proposes the
tool calls of a script, and two callers released at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from tests.deadline import HANG


class ScriptedChatModel(BaseChatModel):
    """Turn n (the number of AI messages already in the conversation) proposes `script[n]`:
    a list of tool calls ``(name, args)`` or a final text. Deterministic, offline; every call
    is counted in `calls_file` when given (the model must not be called again on a resume)."""

    script: list[Any]
    calls_file: str | None = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        if self.calls_file is not None:
            with open(self.calls_file, "a") as f:
                f.write(f"{turn}\n")
        step = self.script[turn] if turn < len(self.script) else "done"
        if isinstance(step, str):
            message = AIMessage(content=step)
        else:
            calls = [
                {"name": name, "args": args, "id": f"call_{turn}_{i}", "type": "tool_call"}
                for i, (name, args) in enumerate(step)
            ]
            message = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])


def at_once(work: Callable[[], Any], count: int = 2) -> list[Any]:
    """Run `work` on `count` threads released together: what each returned, or raised."""
    barrier = threading.Barrier(count, timeout=HANG)

    def one() -> Any:
        barrier.wait()
        try:
            return work()
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(count) as pool:
        running = [pool.submit(one) for _ in range(count)]
        return [f.result(timeout=HANG) for f in running]
