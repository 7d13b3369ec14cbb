"""What the MCP gateway adds to a tool call: the official `mcp` Python client calling a tool
straight on an MCP server, against the same call through ``signoff mcp-gateway``.

Run it with ``make bench``. Everything speaks stdio, as a desktop client does: the server is this
file with ``--upstream`` (the `mcp` SDK's low-level server, one tool, ``note``, that answers its
text), the gateway a ``python -m signoff mcp-gateway`` process on a fresh SQLite file, started by
the client and starting the server. One call at a time, each with new arguments; `WARMUP` calls
are not counted.

- **direct** (the peer): client → server.
- **gateway, allowed**: client → gateway → server, the policy allowing ``note``: the policy, an
  audit entry written (``synchronous=FULL``), the call forwarded, its `_meta` dropped.
- **gateway, held, approved in the client's dialog**: the policy asks for ``note``; the client's
  elicitation callback approves at once. The approval written, the person asked (2025-11-25: an
  ``elicitation/create`` request in the middle of the call; 2026-07-28: an input-required result
  and the call again with the answer, the request state sealed and opened), the decision taken
  (compare-and-set, audited), the ledger's start (audited) and finish around the forwarded call.

- **a resource read** (``note://<n>``, a template of the server), direct and through the gateway
  with a rule allowing it: the URI brought to its one spelling, judged, audited, forwarded, its
  contents screened.
- **a sampling request relayed**: the tool ``ask`` asks the client's model (sampling) before it
  answers; through the gateway the request goes over the client's own connection to the server
  and back, audited (``relay``).

The ratio is each path's p50 over the direct call's (a read's over the direct read's, a relayed
sampling's over the direct one's). ``bench/results/mcp_gateway.json`` keeps
every figure.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

import yaml
from mcp import Client, StdioServerParameters, types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Latency, environment, latency, ms, wide_console

UPSTREAM: Final = "--upstream"
SAMPLES: Final = 300
HELD_SAMPLES: Final = 100
WARMUP: Final = 20
RESULTS: Final = Path(__file__).resolve().parent / "results" / "mcp_gateway.json"


# -- the server behind -------------------------------------------------------------------------


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    tools = [types.Tool(name=name, input_schema=schema) for name in ("note", "ask")]
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = str((params.arguments or {}).get("text", ""))
    if params.name == "ask":
        asked = types.SamplingMessage(
            role="user", content=types.TextContent(type="text", text=text)
        )
        sampled = await ctx.session.create_message([asked], max_tokens=10)
        text = sampled.content.text
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(uri_template="note://{n}", name="note")
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
    uri = str(params.uri)
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=uri)])


async def upstream() -> None:
    from mcp.server.stdio import stdio_server

    warnings.simplefilter("ignore", MCPDeprecationWarning)  # sampling: deprecated in 2026
    server = Server(
        "bench-upstream",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


# -- the client --------------------------------------------------------------------------------

SERVER = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).resolve()), UPSTREAM]
)


def gateway(folder: Path, verdict: str) -> StdioServerParameters:
    config = {
        "database": f"sqlite+aiosqlite:///{folder / f'{verdict}.db'}",
        "servers": {"up": {"command": SERVER.command, "args": SERVER.args}},
        "rules": [{verdict: "note"}, {"allow": "ask"}, {"allow": {"resource": "note://*"}}],
        "gateway": {"principal": "bench", "wait": "30s"},
    }
    path = folder / f"{verdict}.yaml"
    path.write_text(yaml.safe_dump(config))
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "signoff", "mcp-gateway", "--config", str(path)],
        env=dict(os.environ),
    )


async def approve(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"decision": "approve"})


async def model(context: Any, params: Any) -> types.CreateMessageResult:
    said = types.TextContent(type="text", text="sampled")
    return types.CreateMessageResult(role="assistant", content=said, model="bench")


async def note(client: Client, n: int) -> None:
    result = await client.call_tool("note", {"text": f"note {n}"})
    assert not result.is_error and result.structured_content is None, result
    assert result.content[0].text == f"note {n}"  # type: ignore[union-attr]


async def read(client: Client, n: int) -> None:
    result = await client.read_resource(f"note://n{n}")
    assert result.contents[0].text == f"note://n{n}"  # type: ignore[union-attr]


async def ask(client: Client, n: int) -> None:
    result = await client.call_tool("ask", {"text": f"ask {n}"})
    assert result.content[0].text == "sampled", result  # type: ignore[union-attr]


async def measure(
    target: StdioServerParameters,
    samples: int,
    operation: Callable[[Client, int], Awaitable[None]] = note,
    **options: Any,
) -> Latency:
    seconds: list[float] = []
    async with Client(target, **options) as client:
        for n in range(WARMUP + samples):
            start = time.perf_counter()
            await operation(client, n)
            elapsed = time.perf_counter() - start
            if n >= WARMUP:
                seconds.append(elapsed)
    return latency(seconds)


async def run() -> None:
    console = wide_console()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        results = {
            "direct": await measure(SERVER, SAMPLES),
            "gateway, allowed": await measure(gateway(folder, "allow"), SAMPLES),
            "gateway, held, approved in the dialog (2025-11-25)": await measure(
                gateway(folder, "ask"), HELD_SAMPLES, mode="legacy", elicitation_callback=approve
            ),
            "gateway, held, approved in the dialog (2026-07-28)": await measure(
                gateway(folder, "ask"), HELD_SAMPLES, mode="auto", elicitation_callback=approve
            ),
            "read, direct": await measure(SERVER, SAMPLES, read),
            "read, gateway, allowed": await measure(gateway(folder, "allow"), SAMPLES, read),
            "sampling, direct": await measure(
                SERVER, SAMPLES, ask, mode="legacy", sampling_callback=model
            ),
            "sampling, relayed by the gateway": await measure(
                gateway(folder, "allow"), SAMPLES, ask, mode="legacy", sampling_callback=model
            ),
        }
    peers = {"read": results["read, direct"].p50_ms, "sampling": results["sampling, direct"].p50_ms}
    table = Table(title="Over stdio, one at a time (the mcp Python client; SQLite)")
    for header in ("path", "p50 ms", "p99 ms", "n", "p50 / direct"):
        table.add_column(header, justify="left" if header == "path" else "right")
    ratios = {}
    for path, figures in results.items():
        direct = peers.get(path.split(",")[0], results["direct"].p50_ms)
        ratios[path] = round(figures.p50_ms / direct, 2)
        table.add_row(
            path, ms(figures.p50_ms), ms(figures.p99_ms), f"{figures.samples:,}", f"{ratios[path]}x"
        )
    console.print(table)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            environment("mcp_gateway")
            | {
                "results": {path: asdict(figures) for path, figures in results.items()},
                "p50_ratio_to_direct": ratios,
            },
            indent=2,
        )
        + "\n"
    )


def main() -> None:
    if sys.argv[1:2] == [UPSTREAM]:
        asyncio.run(upstream())
    else:
        asyncio.run(run())


if __name__ == "__main__":
    main()
