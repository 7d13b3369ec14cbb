"""OpenAIChatModel against a real HTTP server on loopback speaking the chat-completions API."""

from __future__ import annotations

from signoff import ToolCall
from signoff.agent import Message, ToolSpec
from signoff.agent.openai import OpenAIChatModel
from tests.agent.openai_server import scripted_openai

SPEC = ToolSpec(
    name="delete_pod",
    description="Delete a pod.",
    parameters={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
)
CALL = ("call_1", "delete_pod", '{"name": "nginx-123"}')
DELETE = ToolCall(id="call_1", name="delete_pod", args={"name": "nginx-123"})


async def test_a_turn_with_tool_calls_comes_back_as_tool_calls():
    with scripted_openai([("Deleting it.", [CALL])]) as (url, server):
        model = OpenAIChatModel("scripted", base_url=url, temperature=0)
        turn = await model.complete([Message(role="user", content="delete nginx-123")], [SPEC])
    assert turn.text == "Deleting it."
    [call] = turn.tool_calls
    assert (call.id, call.name, call.args) == ("call_1", "delete_pod", {"name": "nginx-123"})
    [request] = server.requests
    assert request["model"] == "scripted" and request["temperature"] == 0
    assert request["tools"][0]["function"]["name"] == "delete_pod"
    assert request["messages"] == [{"role": "user", "content": "delete nginx-123"}]


async def test_the_conversation_goes_out_in_the_wire_format():
    history = [
        Message(role="system", content="You manage pods."),
        Message(role="user", content="delete nginx-123"),
        Message(role="assistant", content="", tool_calls=(DELETE,)),
        Message(role="tool", content="deleted", tool_call_id="call_1", name="delete_pod"),
    ]
    with scripted_openai([("Done.", [])]) as (url, server):
        turn = await OpenAIChatModel("scripted", base_url=url).complete(history, [])
    assert (turn.text, turn.tool_calls) == ("Done.", ())
    sent = server.requests[0]["messages"]
    assert sent[2]["tool_calls"][0]["function"] == {
        "name": "delete_pod",
        "arguments": '{"name": "nginx-123"}',
    }
    assert sent[3] == {"role": "tool", "content": "deleted", "tool_call_id": "call_1"}
    assert "tools" not in server.requests[0]


async def test_a_streamed_turn_yields_text_pieces_then_whole_tool_calls():
    second = ("call_2", "scale", '{"name": "web", "replicas": 3}')
    with scripted_openai([("Deleting and scaling.", [CALL, second])]) as (url, _):
        model = OpenAIChatModel("scripted", base_url=url)
        deltas = [d async for d in model.stream([Message(role="user", content="go")], [SPEC])]
    assert "".join(d.text for d in deltas) == "Deleting and scaling."
    calls = [d.tool_call for d in deltas if d.tool_call is not None]
    assert [(c.id, c.name, c.args) for c in calls] == [
        ("call_1", "delete_pod", {"name": "nginx-123"}),
        ("call_2", "scale", {"name": "web", "replicas": 3}),
    ]


async def test_raw_argument_text_goes_back_to_the_model_exactly_as_it_came():
    raw = ToolCall(id="call_9", name="rm", args='{"path": /etc')  # type: ignore[arg-type]
    history = [Message(role="assistant", tool_calls=(raw,))]
    with scripted_openai([("ok", [])]) as (url, server):
        await OpenAIChatModel("scripted", base_url=url).complete(history, [])
    sent = server.requests[0]["messages"][0]["tool_calls"][0]["function"]["arguments"]
    assert sent == '{"path": /etc'


async def test_arguments_that_are_not_json_are_kept_as_the_raw_text():
    with scripted_openai([("", [("call_9", "rm", '{"path": /etc')])]) as (url, _):
        turn = await OpenAIChatModel("scripted", base_url=url).complete([], [])
    raw: object = turn.tool_calls[0].args
    assert raw == '{"path": /etc'  # kept as text: the policy fails closed on it
