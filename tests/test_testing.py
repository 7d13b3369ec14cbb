"""The public test doubles."""

from __future__ import annotations

import pytest

from signoff.agent import Message, Model, ModelTurn, StreamingModel, ToolSpec
from signoff.testing import ScriptedModel, ScriptExhausted, call

SPEC = ToolSpec(name="delete_pod", description="Delete a pod.")


async def test_a_scripted_model_plays_its_turns_in_order_and_keeps_what_it_was_asked():
    model = ScriptedModel(
        [
            ModelTurn(text="Deleting.", tool_calls=(call("delete_pod", name="nginx-123"),)),
            lambda messages: ModelTurn(text=f"Done after {len(messages)} messages."),
        ]
    )
    assert isinstance(model, Model) and isinstance(model, StreamingModel)
    first = await model.complete([Message(role="user", content="delete nginx-123")], [SPEC])
    assert first.tool_calls[0].args == {"name": "nginx-123"}
    history = [
        Message(role="user", content="delete nginx-123"),
        Message(role="assistant", content="Deleting.", tool_calls=first.tool_calls),
        Message(role="tool", content="deleted", tool_call_id="call_delete_pod", name="delete_pod"),
    ]
    assert (await model.complete(history, [SPEC])).text == "Done after 3 messages."
    assert [len(r.messages) for r in model.requests] == [1, 3]
    assert model.requests[0].tools == (SPEC,)
    with pytest.raises(ScriptExhausted, match="the script has 2 turns and turn 3 was asked for"):
        await model.complete(history, [])


async def test_a_scripted_model_streams_text_in_chunks_then_the_tool_calls():
    model = ScriptedModel([ModelTurn(text="abcdefghij", tool_calls=(call("x"),))], chunk=4)
    deltas = [d async for d in model.stream([], [])]
    assert [d.text for d in deltas] == ["abcd", "efgh", "ij", ""]
    assert deltas[-1].tool_call == call("x")
