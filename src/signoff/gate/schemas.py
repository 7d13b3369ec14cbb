"""The tool schemas a gate checks edits against: found by the lookup it was given, else among
those registered for the agent and MCP server of the call — and the one an approval keeps, so an
edit decided in another process is checked too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signoff.gate.edits import SchemaLookup, schema_lookup, usable_schema
from signoff.types import ToolCall, canonical_json

__all__ = ["ToolSchemas"]

_KEPT_SCHEMA_BYTES = 64 * 1024
"""A tool schema larger than this is not kept with each approval of its tool: an edit of such a
call is checked where the schema is known (the asker's process, and before it runs)."""


class ToolSchemas:
    """Tool schemas by tool name: the given lookup's first, then the registered ones."""

    def __init__(self, given: SchemaLookup | Mapping[str, Mapping[str, Any]] | None) -> None:
        self._lookup = schema_lookup(given)
        self._registered: dict[tuple[str | None, str | None, str], Mapping[str, Any]] = {}

    def register(
        self, schemas: Mapping[str, Mapping[str, Any]], *, agent: str | None, server: str | None
    ) -> None:
        """`schemas` for the calls of the agent at path `agent` (None: any), to `server`."""
        self._registered.update({(agent, server, name): schema for name, schema in schemas.items()})

    def of(self, call: ToolCall) -> Mapping[str, Any] | None:
        """The JSON schema an edit of `call` is checked against, if its tool has one."""
        if call.kind != "tool":
            return None  # a resource or prompt: whoever serves it checks an edit (the gateway)
        found = self._lookup(call)
        if found is not None:
            return found
        # The most specific registration first: this agent's, at this server; a registration
        # that names no server covers the tool at any (a runner's own MCP tools).
        for key in ((call.agent, call.server, call.name), (None, call.server, call.name),
                    (call.agent, None, call.name), (None, None, call.name)):  # fmt: skip
            found = self._registered.get(key)
            if found is not None:
                return found
        return None

    def kept(self, call: ToolCall) -> dict[str, Any] | None:
        """The schema a held call's approval keeps: its tool's, when one is known and small
        enough to keep with every approval of it."""
        schema = self.of(call)
        if schema is None or not usable_schema(schema):
            return None  # not a schema an edit can be checked against anywhere
        try:
            if len(canonical_json(schema)) > _KEPT_SCHEMA_BYTES:
                return None
        except (TypeError, ValueError, RecursionError):
            return None  # not JSON: it cannot be kept, nor checked anywhere else
        return dict(schema)
