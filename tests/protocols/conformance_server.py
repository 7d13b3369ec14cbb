"""An MCP server offering what the scenarios of the official conformance suite
(`@modelcontextprotocol/conformance`, server mode) ask of the server under test, written with the
official SDK's low-level server: its tools, resources, prompts, logging, completion and
subscriptions. ``python conformance_server.py stdio`` or ``... http PORT``.

The suite is run against it directly and through ``signoff mcp-gateway``: whatever passes
directly must pass through the gateway (`test_mcp_conformance.py`).
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.streamable_http import EventMessage, EventStore
from mcp.shared.exceptions import MCPDeprecationWarning

# Logging, sampling and roots are deprecated as of 2026-07-28; the suite still tests them.
warnings.simplefilter("ignore", MCPDeprecationWarning)

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
    "rkJggg=="
)
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


def _tool(name: str, description: str, schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=schema or EMPTY)


def _text_arg(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    }


TOOLS = [
    _tool("test_simple_text", "Answers one text block."),
    _tool("test_image_content", "Answers an image."),
    _tool("test_audio_content", "Answers audio."),
    _tool("test_embedded_resource", "Answers an embedded resource."),
    _tool("test_multiple_content_types", "Answers text, an image and a resource."),
    _tool("test_tool_with_logging", "Logs three messages while it runs."),
    _tool("test_tool_with_progress", "Reports progress three times while it runs."),
    _tool("test_error_handling", "Always fails."),
    _tool("test_reconnection", "Closes its SSE stream midway, then answers (SEP-1699)."),
    _tool("test_sampling", "Asks the client's model.", _text_arg("prompt", "What to ask")),
    _tool("test_elicitation", "Asks the user.", _text_arg("message", "What to show")),
    _tool("test_elicitation_sep1034_defaults", "Asks with a default for every field."),
    _tool("test_elicitation_sep1330_enums", "Asks with every kind of enum."),
    _tool(
        "json_schema_2020_12_tool",
        "Has a JSON Schema 2020-12 input schema (SEP-1613).",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
]

DEFAULTS_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

ENUMS_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _answer(*blocks: Any, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(blocks), is_error=error)


def _embedded(uri: str, text: str, mime: str = "text/plain") -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource", resource=types.TextResourceContents(uri=uri, mime_type=mime, text=text)
    )


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    session = ctx.session
    match params.name:
        case "test_simple_text":
            return _answer(_text("This is a simple text response for testing."))
        case "test_image_content":
            return _answer(types.ImageContent(type="image", data=PNG, mime_type="image/png"))
        case "test_audio_content":
            return _answer(types.AudioContent(type="audio", data=WAV, mime_type="audio/wav"))
        case "test_embedded_resource":
            return _answer(
                _embedded("test://embedded-resource", "This is an embedded resource content.")
            )
        case "test_multiple_content_types":
            return _answer(
                _text("Multiple content types test:"),
                types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                _embedded(
                    "test://mixed-content-resource",
                    json.dumps({"test": "data", "value": 123}),
                    "application/json",
                ),
            )
        case "test_tool_with_logging":
            for message in ("Tool execution started", "Tool processing data"):
                await session.send_log_message("info", message, related_request_id=ctx.request_id)
                await anyio.sleep(0.05)
            await session.send_log_message(
                "info", "Tool execution completed", related_request_id=ctx.request_id
            )
            return _answer(_text("Tool with logging executed successfully"))
        case "test_tool_with_progress":
            for step in (0, 50, 100):
                await session.report_progress(step, 100, f"Completed step {step} of 100")
                if step < 100:
                    await anyio.sleep(0.05)
            meta = ctx.meta or {}
            token = meta.get("progress_token", meta.get("progressToken"))
            return _answer(_text(str(token)))
        case "test_error_handling":
            return _answer(
                _text("This tool intentionally returns an error for testing"), error=True
            )
        case "test_reconnection":
            if ctx.close_sse_stream is not None:
                await ctx.close_sse_stream()
            await anyio.sleep(0.1)
            return _answer(_text("Reconnection test completed successfully."))
        case "test_sampling":
            asked = types.SamplingMessage(role="user", content=_text(str(args.get("prompt"))))
            sampled = await session.create_message(
                [asked], max_tokens=100, related_request_id=ctx.request_id
            )
            content = sampled.content
            said = content.text if isinstance(content, types.TextContent) else str(content)
            return _answer(_text(f"LLM response: {said}"))
        case "test_elicitation":
            form = _text_arg("response", "User's response")
            return await _elicited(ctx, str(args.get("message")), form, "User response")
        case "test_elicitation_sep1034_defaults":
            message = "Please review and update the form fields with defaults"
            return await _elicited(ctx, message, DEFAULTS_FORM, "Elicitation completed")
        case "test_elicitation_sep1330_enums":
            message = "Please select options from the enum fields"
            return await _elicited(ctx, message, ENUMS_FORM, "Elicitation completed")
        case "json_schema_2020_12_tool":
            return _answer(_text(f"JSON Schema 2020-12 tool called with: {json.dumps(args)}"))
    raise ValueError(f"no tool {params.name}")


async def _elicited(
    ctx: Any, message: str, form: dict[str, Any], said: str
) -> types.CallToolResult:
    answer = await ctx.session.elicit_form(message, form, related_request_id=ctx.request_id)
    content = json.dumps(answer.content or {})
    return _answer(_text(f"{said}: action={answer.action}, content={content}"))


RESOURCES = [
    types.Resource(
        uri="test://static-text", name="static-text", title="Static Text Resource",
        mime_type="text/plain",
    ),
    types.Resource(
        uri="test://static-binary", name="static-binary", title="Static Binary Resource",
        mime_type="image/png",
    ),
    types.Resource(
        uri="test://watched-resource", name="watched-resource", title="Watched Resource",
        mime_type="text/plain",
    ),
]  # fmt: skip


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(
        uri_template="test://template/{id}/data", name="template", mime_type="application/json"
    )
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
    uri = str(params.uri)
    contents: types.TextResourceContents | types.BlobResourceContents
    if uri == "test://static-text":
        text = "This is the content of the static text resource."
        contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)
    elif uri == "test://static-binary":
        contents = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG)
    elif uri == "test://watched-resource":
        text = "Watched resource content"
        contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)
    elif uri.startswith("test://template/") and uri.endswith("/data"):
        key = uri.removeprefix("test://template/").removesuffix("/data")
        text = json.dumps({"id": key, "templateTest": True, "data": f"Data for ID: {key}"})
        contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
    else:
        raise ValueError(f"no resource {uri}")
    return types.ReadResourceResult(contents=[contents])


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    await ctx.session.send_resource_updated(str(params.uri))  # at once: tests need not wait
    return types.EmptyResult()


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A prompt without arguments."),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two required arguments.",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt embedding a resource.",
        arguments=[types.PromptArgument(name="resourceUri", required=True)],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt with an image."),
]


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


def _said(content: Any) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=content)


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    args = params.arguments or {}
    if params.name == "test_simple_prompt":
        messages = [_said(_text("This is a simple prompt for testing."))]
    elif params.name == "test_prompt_with_arguments":
        text = f"Prompt with arguments: arg1='{args.get('arg1')}', arg2='{args.get('arg2')}'"
        messages = [_said(_text(text))]
    elif params.name == "test_prompt_with_embedded_resource":
        embedded = _embedded(args.get("resourceUri", ""), "Embedded resource content for testing.")
        messages = [_said(embedded), _said(_text("Please process the embedded resource above."))]
    elif params.name == "test_prompt_with_image":
        image = types.ImageContent(type="image", data=PNG, mime_type="image/png")
        messages = [_said(image), _said(_text("Please analyze the image above."))]
    else:
        raise ValueError(f"no prompt {params.name}")
    return types.GetPromptResult(messages=messages)


async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
    # The suite asks none of a template: its ids complete, for the gateway's tests.
    if isinstance(params.ref, types.ResourceTemplateReference):
        return types.CompleteResult(completion=types.Completion(values=["1", "22", "secret"]))
    return types.CompleteResult(completion=types.Completion(values=[], total=0, has_more=False))


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    await ctx.session.send_log_message("info", f"Log level set to: {params.level}")
    return types.EmptyResult()


class ConformanceServer(Server[Any]):
    """Declares that its lists change (the suite's own server says so too)."""

    def create_initialization_options(self, *args: Any, **kwargs: Any) -> Any:
        changes = NotificationOptions(prompts_changed=True, resources_changed=True,
                                      tools_changed=True)  # fmt: skip
        return super().create_initialization_options(changes)


server = ConformanceServer(
    "mcp-conformance-test-server",
    version="1.0.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_list_resource_templates=list_templates,
    on_read_resource=read_resource,
    on_subscribe_resource=subscribe,
    on_unsubscribe_resource=unsubscribe,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_completion=complete,
)
server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)


class Events(EventStore):
    """The events of every stream, kept in memory, so a client can resume one (SEP-1699)."""

    def __init__(self) -> None:
        self.kept: list[tuple[str, str, Any]] = []

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = f"{len(self.kept):08d}"
        self.kept.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: Any) -> str | None:
        stream = next((s for e, s, _ in self.kept if e == last_event_id), None)
        for event_id, stream_id, message in self.kept:
            if stream_id == stream and event_id > last_event_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


def main() -> None:
    if sys.argv[1] == "stdio":
        from mcp.server.stdio import stdio_server

        async def serve() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(serve)
    else:
        import uvicorn

        app = server.streamable_http_app(
            streamable_http_path="/mcp", event_store=Events(), retry_interval=500
        )
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")


if __name__ == "__main__":
    main()
