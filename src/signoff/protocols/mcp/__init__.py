"""MCP through the official `mcp` SDK (``pip install 'signoff[mcp]'``): the tools of any MCP
server as an agent's tools."""

from signoff.protocols.mcp.tools import MCPServer, MCPTool

__all__ = ["MCPServer", "MCPTool"]
