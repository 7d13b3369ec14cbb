"""A tool call as a model proposes it, and the canonical JSON its digest is made of."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from signoff.errors import InvalidArgumentsError

__all__ = ["CallKind", "ToolCall", "call_json", "canonical_json"]

CallKind: TypeAlias = Literal["tool", "resource", "prompt", "question"]
"""What a call asks for: a tool run, an MCP resource read (its name is the URI), an MCP
prompt got (its arguments are the prompt's) or a question to a person (its name is the ask
tool's, its arguments the question: `signoff.gate.questions`)."""


def canonical_json(value: Any) -> bytes:
    """Serialize `value` to one canonical UTF-8 JSON form: sorted keys, no spaces, no NaN.

    Equal values give equal bytes, whatever the order their keys were written in.
    """
    try:
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode()
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError (a lone surrogate) is a ValueError
        raise InvalidArgumentsError(f"value is not representable as JSON: {exc}") from exc
    except RecursionError:
        raise InvalidArgumentsError("value is nested too deep to write down as JSON") from None


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call proposed by a model."""

    id: str
    """The call's id as the model or framework gave it (unique within a model turn)."""
    name: str
    """The tool's name."""
    args: dict[str, Any] = field(default_factory=dict)
    """The arguments. A model can produce anything here; a policy fails closed on non-objects."""
    server: str | None = None
    """The MCP server that provides the tool, when it comes from one."""
    agent: str | None = None
    """The path of the agent that made the call, like ``coordinator/researcher``."""
    kind: CallKind = "tool"
    """A tool call, or (through the MCP gateway) a resource read or a prompt got: the policy
    judges each kind by its own rules."""

    @property
    def digest(self) -> str:
        """sha256 of the canonical JSON of ``[name, args, server]`` (and the kind, when it is
        not a tool): what an approval binds to."""
        return hashlib.sha256(call_json(self)).hexdigest()


def call_json(call: ToolCall) -> bytes:
    """The bytes a call's digest hashes: the canonical JSON of ``[name, args, server]``, with
    the kind after them when it is not ``tool`` (a tool call's digest is as it always was)."""
    if call.kind == "tool":
        return canonical_json([call.name, call.args, call.server])
    return canonical_json([call.name, call.args, call.server, call.kind])
