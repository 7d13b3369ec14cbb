"""Coding agents behind signoff: Claude Code's and Gemini CLI's tool hooks, answered by the
same gate as every framework — ``POST /v1/hooks/claude-code`` (an HTTP hook) and ``signoff hook
claude-code`` (a command hook) alike."""

from signoff.protocols.hooks.calls import AGENTS, HookCall, HookInputError, read_call
from signoff.protocols.hooks.judging import Answer, Hooks
from signoff.protocols.hooks.settings import HookSettings
from signoff.protocols.hooks.wire import output

__all__ = [
    "AGENTS",
    "Answer",
    "HookCall",
    "HookInputError",
    "HookSettings",
    "Hooks",
    "output",
    "read_call",
]
