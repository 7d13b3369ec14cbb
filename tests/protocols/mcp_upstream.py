"""An MCP server (the official SDK's low-level server) for the gateway's tests, over stdio or
streamable HTTP: ``python mcp_upstream.py stdio`` / ``python mcp_upstream.py http PORT``; with
``stdio legacy`` it speaks only the 2025-era protocol (no ``server/discover``).

- ``echo {text}`` answers the text, with `_meta` on the result and on its block;
- ``headers`` answers the HTTP headers its request came with (JSON);
- ``crash`` ends the process at once, mid-call;
- ``slow {note, seconds}`` sleeps, then counts as ``count`` does; ``slow_idempotent`` too,
  annotated idempotent;
- ``count`` appends a line to the file ``$UPSTREAM_COUNT_FILE`` (how often a call really ran);
- ``rm {path, dry_run}`` counts ``rm <path>`` as ``count`` does — or, with ``dry_run`` true,
  only answers the unified diff removing the file's line from ``listing`` would make, as
  ``plan_rm {path}`` always does (a companion tool that previews ``rm``);
- ``roots`` asks its client for its roots and answers their URIs (JSON);
- ``announce {uri}`` tells its client its tools changed and the resource `uri` was updated (a
  2025-era client on its session, a 2026-07-28 one on its ``subscriptions/listen`` streams);
- ``carry {uri}`` answers the contents of `uri` in its structured content;
- ``ask_model {uri}`` asks its client's model about the contents of `uri` (sampling);
- ``transfer {to, pad, also, sample}`` asks its client to confirm first — over 2026-07-28 in an
  input-required result (its request state `pad` characters longer, with the questions named in
  `also` asked too, and with `sample` its client's model too, answering ``sent to <to> (<what
  the model said>)``; -32021 when the client declared no
  elicitation; with `nag`, over 2026-07-28, it asks again whatever it was told), over 2025-11-25
  with ``elicitation/create`` in the middle of the call — writes ``asked <to>`` to the count file
  each time it asks and ``sent <to>`` once confirmed;
- the resource ``memo://folder`` reads as the contents of each ``memo://...`` of `FOLDER`;
- the resource ``memo://asked``, listed while the file ``$UPSTREAM_ASKED_FILE`` exists, asks its
  2026-07-28 client to confirm first, with a request state naming ``$UPSTREAM_NAME``, and reads
  as the request state it was read again with;
- a ``file:`` URI reads as the file at its path, whatever its authority says (as many servers
  read ``urlparse(uri).path``, percent-decoded).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# Roots are deprecated as of 2026-07-28; 2025-era clients still have them.
warnings.simplefilter("ignore", MCPDeprecationWarning)

_META = {"io.example/secret-trace": "upstream-internal"}

TOOLS = [
    types.Tool.model_validate(
        {
            "name": "echo",
            "description": "Say the text back.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            "_meta": _META,
        }
    ),
    types.Tool(name="headers", input_schema={"type": "object", "properties": {}}),
    types.Tool(
        name="slow",
        input_schema={
            "type": "object",
            "properties": {"note": {"type": "string"}, "seconds": {"type": "number"}},
        },
    ),
    types.Tool(
        name="slow_idempotent",
        input_schema={
            "type": "object",
            "properties": {"note": {"type": "string"}, "seconds": {"type": "number"}},
        },
        annotations=types.ToolAnnotations(idempotent_hint=True),
    ),
    types.Tool(name="crash", input_schema={"type": "object", "properties": {}}),
    types.Tool(
        name="count",
        input_schema={"type": "object", "properties": {"note": {"type": "string"}}},
    ),
    types.Tool(
        name="rm",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}, "dry_run": {"type": "boolean"}},
            "required": ["path"],
        },
    ),
    types.Tool(
        name="plan_rm",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
    types.Tool(name="roots", input_schema={"type": "object", "properties": {}}),
    types.Tool(
        name="carry", input_schema={"type": "object", "properties": {"uri": {"type": "string"}}}
    ),
    types.Tool(
        name="ask_model",
        input_schema={"type": "object", "properties": {"uri": {"type": "string"}}},
    ),
    types.Tool(
        name="announce",
        input_schema={"type": "object", "properties": {"uri": {"type": "string"}}},
    ),
    types.Tool(
        name="transfer",
        input_schema={
            "type": "object",
            "properties": {
                "to": {"type": "string"},
                "pad": {"type": "integer"},
                "also": {"type": "array", "items": {"type": "string"}},
                "sample": {"type": "boolean"},
                "nag": {"type": "boolean"},
            },
            "required": ["to"],
        },
    ),
]
CONFIRM: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
    args = params.arguments or {}
    if params.name == "transfer":
        return await _transfer(ctx, params)
    if params.name == "echo":
        block = types.TextContent(type="text", text=str(args["text"]), _meta=_META)
        embedded = types.EmbeddedResource.model_validate(
            {"type": "resource", "_meta": _META,
             "resource": {"uri": "memo://echo", "text": str(args["text"]), "_meta": _META}}
        )  # fmt: skip
        return types.CallToolResult(content=[block, embedded], _meta=_META)
    if params.name in ("slow", "slow_idempotent"):
        await anyio.sleep(float(args.get("seconds", 1)))
        with open(os.environ["UPSTREAM_COUNT_FILE"], "a") as out:
            out.write(f"{args.get('note', '')}\n")
        return types.CallToolResult(content=[types.TextContent(type="text", text="slept")])
    if params.name == "headers":
        request = ctx.request
        headers = {} if request is None else dict(request.headers)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(headers))]
        )
    if params.name == "crash":
        os._exit(3)
    if params.name == "count":
        with open(os.environ["UPSTREAM_COUNT_FILE"], "a") as out:
            out.write(f"{args.get('note', '')}\n")
        return types.CallToolResult(content=[types.TextContent(type="text", text="counted")])
    if params.name == "plan_rm" or (params.name == "rm" and args.get("dry_run") is True):
        path = str(args["path"])
        if path == "/":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="refusing to plan /")], is_error=True
            )
        return _said(f"--- a/listing\n+++ b/listing\n@@ -1,2 +1 @@\n-{path}\n keep.txt\n")
    if params.name == "rm":
        with open(os.environ["UPSTREAM_COUNT_FILE"], "a") as out:
            out.write(f"rm {args['path']}\n")
        return _said("removed")
    if params.name == "roots":
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.roots is None:
            return _said(json.dumps("no roots capability"))
        listed = await ctx.session.list_roots()
        return _said(json.dumps([str(root.uri) for root in listed.roots]))
    if params.name == "carry":
        uri = str(args["uri"])
        structured = {"found": [{"uri": uri, "text": f"contents of {uri}"}]}
        return types.CallToolResult(content=[], structured_content=structured)
    if params.name == "ask_model":
        uri = str(args["uri"])
        asked = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="?"))
        attached = {"attached": {"uri": uri, "text": f"contents of {uri}"}}
        sampled = await ctx.session.create_message([asked], max_tokens=10, metadata=attached)
        return _said(sampled.content.text)
    if params.name == "announce":
        await ctx.session.send_tool_list_changed()
        await ctx.session.send_resource_updated(str(args["uri"]))
        await BUS.publish(ToolsListChanged())
        await BUS.publish(ResourceUpdated(uri=str(args["uri"])))
        return _said("announced")
    raise ValueError(f"no tool {params.name}")


async def _transfer(ctx: Any, params: types.CallToolRequestParams) -> Any:
    args = params.arguments or {}
    to = str(args["to"])
    question = f"Send it to {to}?"
    sampled = None
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        _count(f"asked {to}")
        answer = await ctx.session.elicit_form(question, CONFIRM)
        confirmed = answer.action == "accept" and (answer.content or {}).get("confirm") is True
    else:
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            raise MCPError(MISSING_REQUIRED_CLIENT_CAPABILITY, "transfer needs elicitation")
        sample = args.get("sample") is True
        if sample and capabilities.sampling is None:
            raise MCPError(MISSING_REQUIRED_CLIENT_CAPABILITY, "transfer needs sampling")
        state = json.loads(params.request_state) if params.request_state else None
        answer = (params.input_responses or {}).get("confirm")
        sampled = (params.input_responses or {}).get("model")
        if (
            state is None
            or state.get("to") != to
            or not isinstance(answer, types.ElicitResult)
            or (sample and not isinstance(sampled, types.CreateMessageResult))
            or args.get("nag") is True
        ):
            _count(f"asked {to}")
            ask = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=question, requested_schema=CONFIRM)
            )
            state = {"to": to, "pad": "x" * int(args.get("pad", 0))}
            asks: types.InputRequests = {"confirm": ask}
            asks.update((str(key), ask) for key in args.get("also", []))
            if sample:
                why = types.SamplingMessage(role="user", content=types.TextContent(text="Why?"))
                asks["model"] = types.CreateMessageRequest(
                    params=types.CreateMessageRequestParams(messages=[why], max_tokens=10)
                )
            return types.InputRequiredResult(input_requests=asks, request_state=json.dumps(state))
        confirmed = answer.action == "accept" and (answer.content or {}).get("confirm") is True
    if not confirmed:
        return _said("not sent")
    _count(f"sent {to}")
    if isinstance(sampled, types.CreateMessageResult):
        said = sampled.content
        return _said(f"sent to {to} ({said.text if isinstance(said, types.TextContent) else ''})")
    return _said(f"sent to {to}")


def _count(line: str) -> None:
    with open(os.environ["UPSTREAM_COUNT_FILE"], "a") as out:
        out.write(f"{line}\n")


def _said(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


FOLDER = ["memo://folder/a", "memo://private/b", "memo://secret/c"]


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    resources = [types.Resource(uri="memo://folder", name="folder")]
    if os.path.exists(os.environ.get("UPSTREAM_ASKED_FILE", "")):
        resources.append(types.Resource(uri="memo://asked", name="asked"))
    return types.ListResourcesResult(resources=resources)


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
    uri = str(params.uri)
    if uri == "memo://asked":
        if params.request_state is None:
            ask = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message="Read it?", requested_schema=CONFIRM)
            )
            state = json.dumps({"from": os.environ.get("UPSTREAM_NAME")})
            return types.InputRequiredResult(input_requests={"confirm": ask}, request_state=state)
        read = f"{os.environ.get('UPSTREAM_NAME')} read it with {params.request_state}"
        said = types.TextResourceContents(uri=uri, text=read)
        return types.ReadResourceResult(contents=[said])
    if uri.startswith("file:"):
        with open(unquote(urlparse(uri).path)) as opened:
            text = opened.read()
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text)])
    contents: list[types.TextResourceContents | types.BlobResourceContents] = [
        types.TextResourceContents(uri=uri, text=f"contents of {uri}") for uri in FOLDER
    ]
    return types.ReadResourceResult(contents=contents)


BUS = InMemorySubscriptionBus()
server = Server(
    "upstream",
    on_subscriptions_listen=ListenHandler(BUS),
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
)


def main() -> None:
    if sys.argv[1] == "stdio":
        from mcp.server.runner import serve_loop
        from mcp.server.stdio import stdio_server

        async def serve() -> None:
            options = server.create_initialization_options()
            async with stdio_server() as (read, write):
                if sys.argv[2:] != ["legacy"]:
                    await server.run(read, write, options)
                    return
                async with server.lifespan(server) as state:
                    await serve_loop(
                        server, read, write, lifespan_state=state, init_options=options
                    )

        anyio.run(serve)
    else:
        import uvicorn

        app = server.streamable_http_app(streamable_http_path="/mcp")
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")


if __name__ == "__main__":
    main()
