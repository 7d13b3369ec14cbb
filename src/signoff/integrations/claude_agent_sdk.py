"""Claude Code, driven from Python by the Claude Agent SDK, behind signoff: its ``PreToolUse``
and ``PostToolUse`` hooks as in-process callbacks, answered by the same `Hooks` as signoff's
Claude Code hook (`signoff.protocols.hooks`), on the app's `ExternalRuns`.

    runs = connect("policy.yaml", origin=ORIGIN, database="sqlite:///signoff.db")
    options = ClaudeAgentOptions(
        mcp_servers={"shop": shop},
        hooks=signoff_hooks(runs, requested_by="alice", tools={"shop": [transfer]}),
    )
    async for message in query(prompt="Pay the invoice", options=options): ...

Every tool call Claude Code makes — its own (``Bash``, ``Edit``, …) and MCP tools
(``mcp__shop__transfer``: the tool ``transfer`` of the server ``shop``) — is judged by the
policy with its arguments; its session is the thread, its ``tool_use_id`` the call. An allowed
call runs; a denied one does not, and the model reads why. A call that asks is held, and the
hook waits (async, in the app) up to `wait` seconds for a decision from any channel — inbox,
API, CLI, another process — then lets it through (a person's edit as the new input) or denies
it with the reason or response the model reads. The same ``tool_use_id`` is let through at most
once (the ledger's claim). After a call ran, what it returned is audited. Claude Code's own
``AskUserQuestion`` (offered when the app gives a ``can_use_tool``) is held as a question, and
the person's answer becomes the tool's input: its result is the answer.

Nobody decided within `wait`: ``deny`` (the model reads that the call waits in signoff),
``ask`` (Claude Code's own permission flow: the app's ``can_use_tool``), or ``defer``: the run
stops with the call kept (`ResultMessage.deferred_tool_use`), and a later run with
``resume=session_id`` asks the hook about the same ``tool_use_id`` again, which answers with the
decision taken meanwhile — also when the app was down. Claude Code defers only a call that is
alone in its model turn: of several deferred together, only the last is asked again on resume.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from pydantic import TypeAdapter, create_model

from signoff.gate.external import ExternalRuns, connect
from signoff.integrations._extra import needs
from signoff.protocols.hooks import Hooks, output, read_call
from signoff.protocols.hooks.judging import OnTimeout
from signoff.protocols.hooks.transcript import FIELD, conversation
from signoff.types import Approval

with needs(__name__, "claude"):
    from claude_agent_sdk import HookContext, HookInput, HookMatcher, SdkMcpTool
    from claude_agent_sdk.types import HookEvent, SyncHookJSONOutput

__all__ = ["ORIGIN", "connect", "signoff_hooks"]

ORIGIN = "claude-agent-sdk"

_MARGIN = 30.0
"""How much longer Claude Code waits for the hook than the hook waits for a person."""


def signoff_hooks(
    runs: ExternalRuns,
    *,
    requested_by: str | None = None,
    wait: float = 300.0,
    on_timeout: OnTimeout = "deny",
    tools: Mapping[str, Sequence[SdkMcpTool[Any]]] | None = None,
    on_hold: Callable[[Approval], object] | None = None,
) -> dict[HookEvent, list[HookMatcher]]:
    """`ClaudeAgentOptions.hooks` that put every tool call behind signoff. `requested_by` is who
    runs the agent (a rule may forbid them approving their own calls); `tools` the in-process
    MCP tools by server name (as given to ``create_sdk_mcp_server``), whose schemas a person's
    edit is checked against; `on_hold(approval)` is told of each call that begins to wait."""
    for server, defined in (tools or {}).items():
        schemas = {t.name: _schema(t.input_schema) for t in defined}
        runs.gate.register_schemas(schemas, server=server)
    hooks = Hooks(runs.gate, wait=wait, on_timeout=on_timeout, runs=runs, on_hold=on_hold)

    async def answer(
        input_data: HookInput, tool_use_id: str | None, context: HookContext
    ) -> SyncHookJSONOutput:
        body: dict[str, Any] = dict(input_data)
        if body.get("hook_event_name") == "PreToolUse":
            # The app runs as the agent's user: the session's last turns, for the people who
            # decide a held call, as signoff's command hook sends them.
            path, folder = body.get("transcript_path"), body.get("cwd")
            told = await asyncio.to_thread(conversation, path, folder=folder)
            body[FIELD] = told
        call = read_call("claude-code", body, local=True)  # the app's files are the agent's
        said = output("claude-code", await hooks.answer(call, requested_by=requested_by))
        return cast("SyncHookJSONOutput", said)

    # A failure in signoff blocks the call: nothing runs that signoff did not answer.
    before = HookMatcher(hooks=[answer], timeout=wait + _MARGIN, on_failure="block")
    after = [HookMatcher(hooks=[answer])]
    return {"PreToolUse": [before], "PostToolUse": after, "PostToolUseFailure": after}


def _schema(declared: Any) -> dict[str, Any]:
    """The JSON schema of an SDK tool's ``input_schema``: a JSON schema as given, else the one
    pydantic makes of its fields' types (``{"amount": int}``, a TypedDict)."""
    if isinstance(declared, Mapping):
        if "properties" in declared or declared.get("type") == "object":
            return dict(declared)
        fields: dict[str, Any] = {name: (kind, ...) for name, kind in declared.items()}
        schema: dict[str, Any] = create_model("Arguments", **fields).model_json_schema()
        return schema
    found: dict[str, Any] = TypeAdapter(declared).json_schema()
    return found
