"""`signoff_hooks`: the Claude Agent SDK's ``PreToolUse`` and ``PostToolUse`` hooks, answered
by signoff's `Hooks` on the app's `ExternalRuns`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from pydantic import TypeAdapter, create_model

from signoff.gate.external import ExternalRuns
from signoff.integrations._extra import needs
from signoff.protocols.hooks import Answer, HookCall, Hooks, output, read_call
from signoff.protocols.hooks.judging import OnTimeout
from signoff.protocols.hooks.transcript import FIELD, conversation
from signoff.types import Approval

with needs(__name__, "claude"):
    from claude_agent_sdk import HookContext, HookInput, HookMatcher, SdkMcpTool
    from claude_agent_sdk.types import HookEvent, SyncHookJSONOutput

    from signoff.integrations.claude_agent_sdk.asking import ASK_SERVER, HANDED, OUTCOMES

__all__ = ["signoff_hooks"]

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
        said = await hooks.answer(call, requested_by=requested_by)
        if said is not None and said.result is not None and call.server == ASK_SERVER:
            said = _handed(call, said.result, said.approval_id)
        return cast("SyncHookJSONOutput", output("claude-code", said))

    # A failure in signoff blocks the call: nothing runs that signoff did not answer.
    before = HookMatcher(hooks=[answer], timeout=wait + _MARGIN, on_failure="block")
    after = [HookMatcher(hooks=[answer])]
    return {"PreToolUse": [before], "PostToolUse": after, "PostToolUseFailure": after}


def _handed(call: HookCall, result: dict[str, Any], approval_id: str | None) -> Answer:
    """Let the ask tool's call of a question done with through to its body, the outcome
    handed over under a token of this hook's own in its input — whatever the model wrote
    there is replaced — so that its result is the outcome, as every framework's ask tool
    gives it."""
    token = OUTCOMES.hand(call.asked, result)
    reason = f"signoff: the question is {result['status'].replace('_', ' ')}"
    return Answer(decision="allow", reason=reason, updated_input={**call.asked, HANDED: token},
                  approval_id=approval_id)  # fmt: skip


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
