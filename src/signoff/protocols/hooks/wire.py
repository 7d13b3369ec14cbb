"""Each coding agent's hook output: what signoff's `Answer` is in the words of Claude Code's
``PreToolUse`` hook and of Gemini CLI's ``BeforeTool`` hook.

Gemini CLI is never told ``ask``: a headless run (``gemini -p``) has no prompt to ask at and
waits for one forever. Its call does not run instead, and the model reads why."""

from __future__ import annotations

from typing import Any

from signoff.protocols.hooks.calls import Agent
from signoff.protocols.hooks.judging import Answer

__all__ = ["output"]


def output(agent: Agent, answer: Answer | None) -> dict[str, Any]:
    """The JSON the agent reads from the hook (an empty object after a call ran)."""
    if answer is None:
        return {}
    if agent == "claude-code":
        said: dict[str, Any] = {
            "hookEventName": "PreToolUse",
            "permissionDecision": answer.decision,
            "permissionDecisionReason": answer.reason,
        }
        if answer.updated_input is not None:
            said["updatedInput"] = answer.updated_input
        return {"hookSpecificOutput": said}
    said = {"decision": "deny" if answer.decision == "ask" else answer.decision,
            "reason": answer.reason}  # fmt: skip
    if answer.updated_input is not None:
        said["hookSpecificOutput"] = {
            "hookEventName": "BeforeTool",
            "tool_input": answer.updated_input,
        }
    return said
