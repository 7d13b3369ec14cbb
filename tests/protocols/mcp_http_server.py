"""A small MCP server over streamable HTTP (the official SDK's server), for the runtime's tests:
``python mcp_http_server.py PORT``. It counts executions of `transfer` so tests can tell how
often a call really ran."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("bank")
transfers: list[int] = []


@server.tool()
def balance() -> int:
    """The account's balance, in cents."""
    return 1000 - sum(transfers)


@server.tool()
def transfer(cents: int, to: str) -> str:
    """Move money out of the account."""
    transfers.append(cents)
    return f"sent {cents} to {to}; transfer #{len(transfers)}"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
