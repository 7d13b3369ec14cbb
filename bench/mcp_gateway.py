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

The ratio is each path's p50 over the direct call's. ``bench/results/mcp_gateway.json`` keeps
every figure.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

import yaml
from mcp import Client, StdioServerParameters, types
from mcp.server.lowlevel import Server
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
    return types.ListToolsResult(tools=[types.Tool(name="note", input_schema=schema)])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = str((params.arguments or {}).get("text", ""))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def upstream() -> None:
    from mcp.server.stdio import stdio_server

    server = Server("bench-upstream", on_list_tools=list_tools, on_call_tool=call_tool)
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
        "rules": [{verdict: "note"}],
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


async def measure(target: StdioServerParameters, samples: int, **options: Any) -> Latency:
    seconds: list[float] = []
    async with Client(target, **options) as client:
        for n in range(WARMUP + samples):
            start = time.perf_counter()
            result = await client.call_tool("note", {"text": f"note {n}"})
            elapsed = time.perf_counter() - start
            assert not result.is_error and result.structured_content is None, result
            assert result.content[0].text == f"note {n}"  # type: ignore[union-attr]
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
        }
    direct = results["direct"].p50_ms
    table = Table(title="A tool call over stdio, one at a time (the mcp Python client; SQLite)")
    for header in ("path", "p50 ms", "p99 ms", "n", "p50 / direct"):
        table.add_column(header, justify="left" if header == "path" else "right")
    ratios = {}
    for path, figures in results.items():
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
