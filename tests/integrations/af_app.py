"""One AdalFlow agent behind signoff, for the tests: the real `Agent` and `Runner`, a
`ModelClient` of AdalFlow's interface playing a script (offline), tools that count every real
execution in a file.

Two things AdalFlow does to the whole process are kept out of the test process:
- it loads tiktoken's ``cl100k_base`` when it is imported, which downloads it (there is no network
  here): the tests give tiktoken a byte-level encoding under that name first — token counts are
  all it is used for, and these tests count none;
- each `FunctionTool` and `ToolManager` calls ``nest_asyncio.apply()``, which patches asyncio for
  every later test of the worker (pure-Python tasks; an ``asyncio.run`` that leaves its loop
  open): the tests run AdalFlow without it, as these runs never nest event loops."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nest_asyncio
import tiktoken.registry
from tiktoken.core import Encoding

tiktoken.registry.ENCODINGS.setdefault(
    "cl100k_base",
    Encoding(
        name="cl100k_base",
        pat_str=r"\S+|\s+",
        mergeable_ranks={bytes([i]): i for i in range(256)},
        special_tokens={"<|endoftext|>": 256},
    ),
)

nest_asyncio.apply = lambda loop=None: None

from adalflow.components.agent.agent import Agent  # noqa: E402 - after the two above
from adalflow.components.agent.runner import Runner  # noqa: E402
from adalflow.core.func_tool import FunctionTool  # noqa: E402
from adalflow.core.model_client import ModelClient  # noqa: E402
from adalflow.core.tool_manager import ToolManager  # noqa: E402
from adalflow.core.types import GeneratorOutput, ModelType  # noqa: E402

from signoff import Policy  # noqa: E402
from signoff.gate.external import ExternalRuns  # noqa: E402
from signoff.integrations.adalflow import ORIGIN, SignoffPermissions, connect  # noqa: E402
from tests.integrations.harness import POLICY as RULES  # noqa: E402
from tests.integrations.harness import asynced, side_effects_in, turns_in  # noqa: E402
from tests.integrations.harness import tools as counting  # noqa: E402

__all__ = ["POLICY", "Runner", "ToolManager", "build", "open_runs"]

POLICY = Policy.from_dict(RULES)
Script = list[tuple[str, dict[str, Any]] | str]


class Scripted(ModelClient):  # type: ignore[misc]
    """Step n proposes `script[n]`: a tool call, or a final answer. Every call of the model is
    noted in `turns`."""

    def __init__(self, script: Script, turns: Path) -> None:
        super().__init__()
        self.script = script
        self.turns = turns
        self.step = 0

    def convert_inputs_to_api_kwargs(
        self, input: Any = None, model_kwargs: Any = None, model_type: Any = ModelType.UNDEFINED
    ) -> dict[str, Any]:
        return {"input": input}

    def _next(self) -> str:
        step = self.script[self.step] if self.step < len(self.script) else "done"
        with self.turns.open("a") as f:
            f.write(f"{self.step}\n")
        self.step += 1
        if isinstance(step, str):
            return json.dumps({"thought": "", "name": "finish", "kwargs": {},
                               "_is_answer_final": True, "_answer": step})  # fmt: skip
        name, kwargs = step
        args = kwargs.get("__args__", [])  # a call with positional arguments
        kwargs = {k: v for k, v in kwargs.items() if k != "__args__"}
        return json.dumps({"thought": "", "name": name, "args": args, "kwargs": kwargs,
                           "_is_answer_final": False, "_answer": None})  # fmt: skip

    def call(self, api_kwargs: Any = None, model_type: Any = ModelType.UNDEFINED) -> str:
        return self._next()

    async def acall(self, api_kwargs: Any = None, model_type: Any = ModelType.UNDEFINED) -> str:
        return self._next()

    def parse_chat_completion(self, completion: Any) -> GeneratorOutput:
        return GeneratorOutput(data=None, raw_response=completion)


def build(
    script: Script,
    folder: Path,
    permissions: SignoffPermissions,
    manager: type[ToolManager] | None = None,
) -> Runner:
    """The agent's runner; `manager` the class of its tool manager (default: AdalFlow's own)."""
    read_file, send_email, charge, _ = counting(side_effects_in(folder))
    tools = [FunctionTool(read_file), FunctionTool(send_email), FunctionTool(asynced(charge))]
    agent = Agent(
        name="assistant",
        tools=tools,
        tool_manager=(
            manager(tools=tools, additional_context={"context_variables": None})
            if manager is not None
            else None
        ),
        model_client=Scripted(script, turns_in(folder)),
        model_kwargs={"model": "scripted"},
        cache_path=str(folder / "adalflow-cache"),  # never the home folder
        use_cache=False,
        max_steps=len(script) + 1,
    )
    return Runner(agent=agent, permission_manager=permissions)


def open_runs(database: str) -> ExternalRuns:
    return connect(POLICY, origin=ORIGIN, database=database)
