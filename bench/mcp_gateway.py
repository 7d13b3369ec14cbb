"""What the MCP gateway adds to a tool call: the official `mcp` Python client calling a tool
straight on an MCP server, against the same call through ``signoff mcp-gateway``.

Run it with ``make bench``. Everything speaks stdio, as a desktop client does: the server is this
file with ``--upstream`` (the `mcp` SDK's low-level server, one tool, ``note``, that answers its
text), the gateway a ``python -m signoff mcp-gateway`` process on a fresh SQLite file, started by
the client and starting the server. One call at a time, each with new arguments; `WARMUP` calls
are not counted. A path and the direct one it is compared with take turns of `TURN` calls, so a
busy machine weighs on both alike. The allowed call and the allowed read are measured for each
protocol revision the client can speak — 2025-11-25 (``mode="legacy"``) and 2026-07-28
(``mode="auto"``, which the gateway and the server both negotiate: checked) — each against the
direct run of its revision.

- **direct** (the peer): client → server.
- **SDK proxy, nothing in between** (the floor under the gateway): client → this file with
  ``--proxy`` → server, the SDK's low-level server in front of the SDK's client, passing the call
  on as it is: the two SDK hops every proxy of the SDK pays, and nothing else.
- **gateway, allowed**: client → gateway → server, the policy allowing ``note``: the policy, an
  audit entry written (``synchronous=FULL``), the call forwarded, its `_meta` dropped.
- **a resource read** (``note://<n>``, a template of the server), direct and through the gateway
  with a rule allowing it: the URI brought to its one spelling, judged, audited (the entry not
  waiting for the disk: a read may run again), forwarded, its contents screened.
- **gateway, held, approved in the dialog**: the policy asks for ``note``; the client's
  elicitation callback approves at once. The approval written, the person asked (2025-11-25: an
  ``elicitation/create`` request in the middle of the call; 2026-07-28: an input-required result
  and the call again with the answer, the request state sealed and opened), the decision taken
  (compare-and-set, audited), the ledger's start (audited) and finish around the forwarded call.
- **a sampling request relayed** (2025-11-25: 2026-07-28 has no sampling request mid-call): the
  tool ``ask`` asks the client's model before it answers; through the gateway the request goes
  over the client's own connection to the server and back, audited (``relay``).

The ratio is each path's p50 over the direct run's of the same operation and revision (a held
call's over the direct call of its revision). The target (issue 50): an allowed call and an
allowed read at most `TARGET` times direct, in each revision. ``bench/results/mcp_gateway.json``
keeps every figure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

import yaml
from mcp import Client, StdioServerParameters, types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Latency, Target, environment, latency, ms, print_targets, wide_console

UPSTREAM: Final = "--upstream"
PROXY: Final = "--proxy"
SAMPLES: Final = 300
HELD_SAMPLES: Final = 100
WARMUP: Final = 20
TURN: Final = 1
"""Calls a side makes in a row before the next side's turn. One: each call wakes processes that
sat idle meanwhile, as an agent's calls seconds apart do. With 10, back to back, the direct
call's two processes stay hot on two cores and take about 40% less time; the gateway's three
cannot, and its ratios come out a quarter to a third higher (docs/performance.md)."""
RESULTS: Final = Path(__file__).resolve().parent / "results" / "mcp_gateway.json"
REVISIONS: Final = {"2025-11-25": "legacy", "2026-07-28": "auto"}
"""Each protocol revision, and the client's mode that speaks it."""
TARGET: Final = 1.5
"""Issue 50: an allowed call and an allowed read through the gateway, at most this times direct."""


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


# -- an SDK proxy with nothing in between --------------------------------------------------------


async def proxy(mode: str) -> None:
    """The floor under the gateway: the SDK's server in front of the SDK's client to the
    server, passing a call or a read on as it is — no policy, no store, no screening."""
    from mcp.server.stdio import stdio_server

    async with Client(SERVER, mode=REVISIONS[mode], cache=None) as behind:

        async def tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return await behind.session.list_tools()

        async def called(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            result = await behind.call_tool(params.name, dict(params.arguments or {}))
            return types.CallToolResult(content=result.content)

        async def resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
            return await behind.read_resource(str(params.uri))

        server = Server("bench-proxy", on_list_tools=tools, on_call_tool=called,
                        on_read_resource=resource)  # fmt: skip
        async with stdio_server() as (reading, writing):
            await server.run(reading, writing, server.create_initialization_options())


# -- the client --------------------------------------------------------------------------------

SERVER = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).resolve()), UPSTREAM]
)


def _proxy(revision: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=[str(Path(__file__).resolve()), PROXY, revision]
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
    sides: Mapping[str, StdioServerParameters],
    samples: int,
    operation: Callable[[Client, int], Awaitable[None]] = note,
    *,
    revision: str,
    **options: Any,
) -> dict[str, Latency]:
    """Each side's latency of `operation`, the sides taking turns of `TURN` operations (each
    side first in turn), so a busy machine weighs on all alike."""
    seconds: dict[str, list[float]] = {side: [] for side in sides}
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for side, target in sides.items():
            client = Client(target, mode=REVISIONS[revision], **options)
            clients[side] = await stack.enter_async_context(client)
            assert client.protocol_version == revision, (client.protocol_version, revision)
        order = list(clients)
        total = WARMUP + samples
        for turn, first in enumerate(range(0, total, TURN)):
            for side in order[turn % len(order) :] + order[: turn % len(order)]:
                for n in range(first, min(first + TURN, total)):
                    start = time.perf_counter()
                    await operation(clients[side], n)
                    elapsed = time.perf_counter() - start
                    if n >= WARMUP:
                        seconds[side].append(elapsed)
    return {side: latency(taken) for side, taken in seconds.items()}


async def measured(folder: Path) -> dict[str, tuple[Latency, str]]:
    """Each path's figures, with the path they are compared with."""
    results: dict[str, tuple[Latency, str]] = {}

    async def add(peer: str, figures: Awaitable[dict[str, Latency]]) -> None:
        results.update({path: (latency, peer) for path, latency in (await figures).items()})

    allowed = gateway(folder, "allow")
    for revision in REVISIONS:
        for what, operation in (("call", note), ("read", read)):
            direct = f"{what}, direct ({revision})"
            sides = {
                direct: SERVER,
                f"{what}, SDK proxy, nothing in between ({revision})": _proxy(revision),
                f"{what}, gateway, allowed ({revision})": allowed,
            }
            await add(direct, measure(sides, SAMPLES, operation, revision=revision))
    for revision in REVISIONS:
        held = {f"call, gateway, held, approved in the dialog ({revision})": gateway(folder, "ask")}
        await add(
            f"call, direct ({revision})",
            measure(held, HELD_SAMPLES, revision=revision, elicitation_callback=approve),
        )
    legacy = "2025-11-25"
    direct = f"sampling, direct ({legacy})"
    sides = {direct: SERVER, f"sampling, relayed by the gateway ({legacy})": allowed}
    await add(direct, measure(sides, SAMPLES, ask, revision=legacy, sampling_callback=model))
    return results


async def run() -> None:
    console = wide_console()
    with tempfile.TemporaryDirectory() as name:
        results = await measured(Path(name))
    table = Table(title="Over stdio, one at a time (the mcp Python client; SQLite)")
    for header in ("path", "p50 ms", "p99 ms", "n", "p50 / direct"):
        table.add_column(header, justify="left" if header == "path" else "right")
    ratios = {}
    for path, (figures, peer) in results.items():
        ratios[path] = round(figures.p50_ms / results[peer][0].p50_ms, 2)
        table.add_row(
            path, ms(figures.p50_ms), ms(figures.p99_ms), f"{figures.samples:,}", f"{ratios[path]}x"
        )
    console.print(table)
    print_targets(console, [
        Target(
            name=path,
            goal=f"≤ {TARGET}x direct",
            value=f"{ratios[path]}x",
            status="met" if ratios[path] <= TARGET else "MISSED",
        )
        for path in results
        if ", gateway, allowed" in path
    ])  # fmt: skip
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            environment("mcp_gateway")
            | {"load_average": os.getloadavg()}
            | {
                "results": {path: asdict(figures) for path, (figures, _) in results.items()},
                "p50_ratio_to_direct": ratios,
            },
            indent=2,
        )
        + "\n"
    )


def main() -> None:
    if sys.argv[1:2] == [UPSTREAM]:
        asyncio.run(upstream())
    elif sys.argv[1:2] == [PROXY]:
        asyncio.run(proxy(sys.argv[2]))
    else:
        asyncio.run(run())


if __name__ == "__main__":
    main()
