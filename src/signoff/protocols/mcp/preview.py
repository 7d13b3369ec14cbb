"""A held call's preview from its own server: what the config of the server names for the tool
(`PreviewSpec`) — a companion tool, or the tool itself as a dry run — called with the call's
arguments; what it answers in text is shown on the call's card (a unified diff shows as one)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp import types

from signoff.gate.preview import Previews
from signoff.protocols.mcp.peer import Peer
from signoff.protocols.mcp.upstream import Upstream, UpstreamError
from signoff.types import ToolCall

__all__ = ["upstream_previews"]


def upstream_previews(
    peer: Peer, upstream: Upstream, call: ToolCall, *, headers: Mapping[str, str], timeout: float
) -> Previews | None:
    """The preview of `call` the config of its server names, over `peer`'s connection, or
    None."""
    how = upstream.spec.previews.get(call.name) if call.kind == "tool" else None
    if how is None:
        return None

    async def preview(**args: Any) -> str:
        link = await peer.link(upstream)
        if how.tool is not None:
            result = await link.call(how.tool, args, headers=headers)
        else:
            assert how.argument is not None  # the settings give one or the other
            result = await link.call(call.name, args | {how.argument: True}, headers=headers)
        if isinstance(result, types.InputRequiredResult):
            raise UpstreamError(f"MCP server {upstream.name!r} asked for input to preview it")
        text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
        if result.is_error:
            raise UpstreamError(text or f"MCP server {upstream.name!r} said the preview failed")
        return text

    return Previews({call.name: preview}, timeout=timeout)
