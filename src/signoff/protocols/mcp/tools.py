"""The tools of an MCP server as an agent's tools, through the official `mcp` client.

```python
async with MCPServer("fs", command="npx", args=["-y", "@modelcontextprotocol/server-filesystem",
                                                "/srv/data"]) as fs:
    agent = Agent(name="files", model=model, tools=fs.tools)
```

Each call carries the server's name, so the policy's ``servers:`` sections apply to it; the
tool's input schema is what edits are checked against; a tool the server marks
``readOnlyHint`` or ``idempotentHint`` may be run again after a crash, the others never are.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from signoff.agent.model import ToolSpec
from signoff.agent.tools import Tool, ToolResult
from signoff.errors import MissingExtraError

if TYPE_CHECKING:
    from mcp import Client

__all__ = ["MCPServer", "MCPTool"]


class MCPServer:
    """One MCP server, reached by a stdio command or a streamable-HTTP URL; its tools are in
    `tools` while the `async with` block runs."""

    def __init__(
        self,
        name: str,
        *,
        command: str | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        url: str | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        prefix: bool = False,
    ) -> None:
        """`include` / `exclude` are globs on the server's tool names (an excluded tool is
        never offered); with `prefix`, tools are offered as ``<name>_<tool>``, and that is the
        name the policy sees too."""
        if (command is None) == (url is None):
            raise ValueError(f"MCP server {name!r}: give either a command or a url")
        self.name = name
        self.command = command
        self.args = list(args)
        self.env = dict(env) if env is not None else None
        self.url = url
        self.include = list(include)
        self.exclude = list(exclude)
        self.prefix = prefix
        self.tools: list[Tool] = []
        self._stack: contextlib.AsyncExitStack | None = None

    async def __aenter__(self) -> MCPServer:
        try:
            from mcp import Client, StdioServerParameters
        except ImportError:
            raise MissingExtraError("MCPServer", "mcp") from None
        target: Any = self.url
        if self.command is not None:
            target = StdioServerParameters(command=self.command, args=self.args, env=self.env)
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(Client(target))
            self.tools = [
                MCPTool(client, self.name, listed, prefix=self.prefix)
                for listed in await list_tools(client)
                if self._offered(listed.name)
            ]
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        for tool in self.tools:
            tool.available = False
        self.tools = []
        if stack is not None:
            await stack.aclose()

    def _offered(self, tool: str) -> bool:
        if self.include and not any(fnmatch.fnmatchcase(tool, p) for p in self.include):
            return False
        return not any(fnmatch.fnmatchcase(tool, p) for p in self.exclude)

    def __repr__(self) -> str:
        where = self.url or " ".join([self.command or "", *self.args])
        return f"MCPServer({self.name!r}, {where!r})"


class MCPTool(Tool):
    """A tool of an MCP server; calling it calls the server."""

    def __init__(self, client: Client, server: str, listed: Any, *, prefix: bool = False) -> None:
        # Not Tool.__init__: there is no Python function, the server describes the tool.
        self.remote_name: str = listed.name
        self.name = f"{server}_{listed.name}" if prefix else listed.name
        self.description = (listed.description or "").strip()
        hints = listed.annotations
        # A read-only tool, or one the server says is idempotent, may run again after a crash.
        self.idempotent = bool(
            hints is not None and (hints.idempotent_hint or hints.read_only_hint)
        )
        self.server = server
        self.spec = ToolSpec(
            name=self.name,
            description=self.description,
            parameters=dict(listed.input_schema or {"type": "object", "properties": {}}),
        )
        self._client = client

    async def invoke(self, args: dict[str, Any], *, key: str | None = None) -> ToolResult:
        """Call the tool on the server; a failure to reach it is an error result, as a tool's
        exception is."""
        try:
            result = await self._client.call_tool(self.remote_name, args)
        except Exception as exc:  # the server is another process: its failure is a result
            return ToolResult(content=f"{type(exc).__name__}: {exc}", is_error=True)
        return ToolResult(content=_text(result), is_error=bool(result.is_error))

    def __repr__(self) -> str:
        return f"MCPTool({self.name!r}, server={self.server!r}, idempotent={self.idempotent})"


async def list_tools(client: Client) -> list[Any]:
    """Every tool the server lists, page after page."""
    listed: list[Any] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        listed += page.tools
        cursor = page.next_cursor
        if cursor is None:
            return listed


def _text(result: Any) -> str:
    """What the model reads: the text blocks; other blocks as JSON; else the structured
    content."""
    parts = []
    for block in result.content:
        if getattr(block, "type", None) == "text":
            parts.append(block.text)
        else:
            parts.append(json.dumps(block.model_dump(mode="json", exclude_none=True)))
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)
