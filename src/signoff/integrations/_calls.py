"""One tool call of a framework's run, as every adapter takes it (what to do with it is
`ExternalRuns.step_of`): running it once through signoff's ledger, with the text the model
reads when signoff does not run it; waiting in memory for its decision, where the framework
cannot pause; the tools' schemas a person's edit is checked against, registered with the
gate once each; and `Tools`, what an adapter's agent judges and runs its calls with."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic_core import to_jsonable_python

from signoff.errors import ApprovalTimeout, CallRefused, ExecutionFailed, OutcomeUnknown
from signoff.gate.answers import blocked_text
from signoff.gate.external import ExternalRuns
from signoff.types import Approval, ToolCall

__all__ = ["Schemas", "Tools", "Unrun", "decided", "result_once", "run_once"]

S = TypeVar("S", bound=Mapping[str, Any] | None)


@dataclass(frozen=True)
class Unrun:
    """A call let through that did not run: signoff refused it, or a worker died inside it
    (its outcome is unknown). `text` is what the model reads instead of its result."""

    text: str


async def run_once(
    runs: ExternalRuns,
    key: str,
    call: ToolCall,
    run: Callable[[], Awaitable[Any]],
    *,
    idempotent: bool = False,
) -> Any:
    """`run` the call once under `key` (its recorded result when it ran before) — or `Unrun`
    when signoff refuses it, or cannot say how it went."""
    try:
        return await runs.once(key, call, run, idempotent=idempotent)
    except CallRefused as exc:
        return Unrun(blocked_text(str(exc)))
    except (OutcomeUnknown, ExecutionFailed) as exc:
        return Unrun(f"signoff: {exc}")


async def result_once(
    runs: ExternalRuns,
    key: str,
    call: ToolCall,
    run: Callable[[], Awaitable[Any]],
    *,
    idempotent: bool = False,
) -> Any:
    """`run_once` for a tool whose result is kept as JSON (``{"result": ...}`` in the ledger):
    what `run` returned, or its recorded result — or `Unrun`."""

    async def execute() -> Any:
        return {"result": to_jsonable_python(await run())}

    ran = await run_once(runs, key, call, execute, idempotent=idempotent)
    return ran if isinstance(ran, Unrun) else ran["result"]


async def decided(
    runs: ExternalRuns,
    approval: Approval,
    timeout: float | None,
    changed: Callable[[Approval], Any] | None = None,
) -> Approval:
    """`approval` once decided, waited for in memory by a framework whose run cannot pause — or
    expired after `timeout` seconds (None: the rule's own timeout, or no limit). `changed` gets
    it each time it changes while it waits (an edit, one approval of several: a new version)."""
    gate, loop = runs.gate, asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while approval.pending:
        left = None if deadline is None else max(deadline - loop.time(), 0.0)
        try:
            found = await runs.bridge.arun(gate.wait(approval.id, left, past=approval.version))
        except ApprovalTimeout:
            [expired] = await runs.bridge.arun(gate.expire([approval]))
            return expired  # or the decision that came first
        if found.pending and changed is not None:
            changed(found)
        approval = found
    return approval


class Schemas:
    """The schemas of an adapter's tools, registered with the gate once per agent path and tool:
    an edit of a call is checked against its tool's schema when it is decided (and again before
    an edited call runs: it may have been decided elsewhere)."""

    def __init__(self, runs: ExternalRuns) -> None:
        self.runs = runs
        self._seen: set[tuple[str | None, str]] = set()

    def __contains__(self, tool: tuple[str | None, str]) -> bool:
        """Whether (agent path, tool name) was registered, or found without a schema."""
        return tool in self._seen

    def register(self, name: str, schema: S, *, agent: str | None) -> S:
        """Register the schema of the tool `name` of `agent` (none: edits are checked by the
        policy only), and give it back."""
        if (agent, name) in self._seen:
            return schema
        if schema is not None:
            self.runs.gate.register_schemas({name: schema}, agent=agent)
        self._seen.add((agent, name))
        return schema

    def register_all(
        self, tools: Iterable[Any], schema_of: Callable[[Any], Mapping[str, Any] | None], *,
        agent: str | None,
    ) -> None:  # fmt: skip
        """Register each tool of `tools` by its ``name``, its schema read by `schema_of` —
        only for a tool not registered yet."""
        for tool in tools:
            name = getattr(tool, "name", None)
            if isinstance(name, str) and (agent, name) not in self._seen:
                self.register(name, schema_of(tool), agent=agent)


class Tools:
    """An adapter's agent as signoff judges and runs its tools' calls: `runs`, the agent `path`
    the policy's ``agents:`` section judges them by, who `requested_by` them (a rule may forbid
    them approving their own), the tools safe to run again when a worker died inside them
    (`idempotent`; any other is then ``unknown``, not re-run), and their schemas."""

    def __init__(
        self,
        runs: ExternalRuns,
        *,
        path: str | None = None,
        requested_by: str | None = None,
        idempotent: Iterable[str] = (),
    ) -> None:
        self.runs = runs
        self.path = path
        self.requested_by = requested_by
        self.idempotent = frozenset(idempotent)
        self._schemas = Schemas(runs)

    async def once(
        self, key: str, call: ToolCall, run: Callable[[], Awaitable[Any]], *, json: bool = False
    ) -> Any:
        """`run_once` (`result_once`: `json`), safe to run again where `call`'s tool is
        `idempotent`."""
        once = result_once if json else run_once
        return await once(self.runs, key, call, run, idempotent=call.name in self.idempotent)
