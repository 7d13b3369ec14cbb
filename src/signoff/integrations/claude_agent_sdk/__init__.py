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
once (the ledger's claim). After a call ran, what it returned is audited. signoff's ask tool,
`ask_person()` in ``mcp_servers`` under `ASK_SERVER`, asks a person: each call is held as a
question, and its outcome is the tool's result (`asking`). Claude Code's own
``AskUserQuestion`` (offered when the app gives a ``can_use_tool``) is held as a question too,
and the person's answer becomes the tool's input: its result is the answer.

Nobody decided within `wait`: ``deny`` (the model reads that the call waits in signoff),
``ask`` (Claude Code's own permission flow: the app's ``can_use_tool``), or ``defer``: the run
stops with the call kept (`ResultMessage.deferred_tool_use`), and a later run with
``resume=session_id`` asks the hook about the same ``tool_use_id`` again, which answers with the
decision taken meanwhile — also when the app was down. Claude Code defers only a call that is
alone in its model turn: of several deferred together, only the last is asked again on resume.
"""

from __future__ import annotations

from signoff.gate.external import connect
from signoff.integrations._extra import needs

with needs(__name__, "claude"):
    from signoff.integrations.claude_agent_sdk.asking import ASK_SERVER, ask_person
    from signoff.integrations.claude_agent_sdk.hooks import signoff_hooks

__all__ = ["ASK_SERVER", "ORIGIN", "ask_person", "connect", "signoff_hooks"]

ORIGIN = "claude-agent-sdk"
