"""The ask tool for an app on the Claude Agent SDK: `ask_person()`, an in-process SDK MCP server
of one tool to give Claude under the name `ASK_SERVER` (Claude calls it
``mcp__signoff__ask_person``).

`signoff_hooks` holds each call of it as a question, as every call of the ask tool is held
(``connect(questions=...)``), and the core judges, holds and checks the answer. Claude Code's
``PreToolUse`` hook can only let a call run or refuse it with words of its own, so once the
question is done with the hook lets the call run with the outcome handed over under a one-time
token it writes into the call's input (`HANDED`), and the tool's body returns that outcome —
answered, declined or no answer, `signoff.gate.questions.question_result` — as the JSON every
framework's ask tool gives. A body reached without such a token (no signoff hook, or one whose
wait ran out with ``on_timeout="ask"``) answers nothing: its result says signoff did not hold
the question.
"""

from __future__ import annotations

import json
import secrets
from typing import Any, Final

from signoff.integrations._asking import ASK_DESCRIPTION, ASK_PARAMETERS, ASK_TOOL
from signoff.integrations._extra import needs

with needs(__name__, "claude"):
    from claude_agent_sdk import McpSdkServerConfig, create_sdk_mcp_server, tool

__all__ = ["ASK_SERVER", "HANDED", "OUTCOMES", "Outcomes", "ask_person"]

ASK_SERVER: Final = "signoff"
"""The name the ask tool's server is given in ``ClaudeAgentOptions.mcp_servers``: only there
does the hook hand a question's outcome to the tool (of any other server, the tool never runs)."""
HANDED: Final = "signoff_outcome"
"""The key of the call's input the hook writes the outcome's token under."""
NOT_HELD: Final = (
    "signoff did not hold this question, so nobody answered it: the ask tool is answered only "
    "through signoff_hooks, in ClaudeAgentOptions.hooks"
)


class Outcomes:
    """The outcomes the hooks handed to the ask tool's body, each under a token of its own and
    with the input it was handed for: taken once. The newest `LIMIT` are kept (one whose call
    never ran is dropped in time)."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._kept: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    def hand(self, asked: dict[str, Any], result: dict[str, Any]) -> str:
        """Keep `result` for the call whose input is `asked`; the token that names it."""
        token = secrets.token_urlsafe(24)
        self._kept[token] = (dict(asked), result)
        while len(self._kept) > self.LIMIT:
            del self._kept[next(iter(self._kept))]
        return token

    def take(self, given: dict[str, Any]) -> dict[str, Any] | None:
        """The outcome the token in `given` (the input the tool was called with) names, once,
        if it was handed for that same input; else None."""
        token = given.get(HANDED)
        kept = self._kept.pop(token, None) if isinstance(token, str) else None
        if kept is None:
            return None
        asked, result = kept
        return result if {k: v for k, v in given.items() if k != HANDED} == asked else None


OUTCOMES: Final = Outcomes()
"""The outcomes handed in this process: the hooks and the in-process tool share it."""


def ask_person(*, name: str = ASK_TOOL, description: str = ASK_DESCRIPTION) -> McpSdkServerConfig:
    """The ask tool, as an SDK MCP server to put in ``mcp_servers`` under `ASK_SERVER`, for an
    agent behind `signoff_hooks`: signoff holds each call as a question for a person, and the
    outcome is its result (a `name` of your own: name it in ``connect(questions=[...])`` too)."""
    # The SDK checks the input it calls the body with against this schema, and the hook's token
    # is in it: the core refuses any other key that is not a question's (`Question.from_args`).
    schema = {k: v for k, v in ASK_PARAMETERS.items() if k != "additionalProperties"}

    @tool(name, description, schema)
    async def ask(args: dict[str, Any]) -> dict[str, Any]:
        result = OUTCOMES.take(args)
        if result is None:
            return {"content": [{"type": "text", "text": NOT_HELD}], "is_error": True}
        return {"content": [{"type": "text", "text": json.dumps(result)}]}

    return create_sdk_mcp_server(ASK_SERVER, tools=[ask])
