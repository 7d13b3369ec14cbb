"""The scenarios' tools as an MCP server (the official SDK's `MCPServer`, over stdio), for the
MCP gateway's adapter: ``python mcp_tools.py SIDE_EFFECTS``.

Each real execution appends its line to the file SIDE_EFFECTS, as `scenarios.record` does (not
imported: this process stays free of signoff, so it starts fast and the gateway's upstream is
only the SDK).
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("scenario-tools")


def _record(line: str) -> None:
    with open(sys.argv[1], "a") as side_effects:
        side_effects.write(line + "\n")


@server.tool(structured_output=False)
def transfer(amount: int, to: str) -> str:
    """Move money."""
    _record(f"transfer {amount} {to}")
    return "transfer ok"


@server.tool(structured_output=False)
def preview_transfer(amount: int, to: str) -> str:
    """What a transfer would change, as a diff of the balances (runs nothing): the gateway's
    preview of ``transfer``, as `scenarios.transfer_preview` says it."""
    return (
        f"--- a/balances\n+++ b/balances\n@@ -1,2 +1,2 @@\n"
        f"-alice: 1000\n-{to}: 0\n+alice: {1000 - amount}\n+{to}: {amount}\n"
    )


@server.tool(structured_output=False)
def read_file(path: str) -> str:
    """Read a file."""
    _record(f"read_file {path}")
    return "read_file ok"


@server.tool(structured_output=False)
def delete_all() -> str:
    """Delete everything."""
    _record("delete_all")
    return "delete_all ok"


if __name__ == "__main__":
    server.run("stdio")
