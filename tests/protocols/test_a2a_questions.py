"""A question an agent asks, over A2A with a2a-sdk's Python client: the task waits for input
with the question, and the client's reply — its text, or a data part — is the answer, once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from a2a.utils.errors import InvalidParamsError, InvalidRequestError, UnsupportedOperationError

from signoff.store import SQLStore
from tests.protocols.live import serving
from tests.protocols.test_a2a import (
    connect,
    data_parts,
    get_task,
    kind_of,
    message,
    send,
    states,
    task_id,
    words,
)


def question_of(status: dict[str, object]) -> dict[str, object]:
    [part] = [p for p in data_parts(status) if p["data"].get("type") == "signoff.question"]
    return dict(part["data"])


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_question_waits_for_input_and_a_data_part_answers_it_once(
    store: SQLStore, side: Path, binding: str
):
    async with serving(store) as (url, _), connect(url, binding=binding) as client:
        asked = await send(client, message("ask Which region?"))
        assert states(asked)[-1] == "input_required"
        status = asked[-1].get("statusUpdate", asked[-1].get("task", {}))["status"]
        said = words(status)
        assert "ops asks you:" in said and "Which region? — one of: eu-west, us-east" in said
        question = question_of(status)
        regions = ["eu-west", "us-east"]
        assert (question["question"], question["choices"], question["schema"]) == (
            "Which region?", regions, {"type": "string", "enum": regions},
        )  # fmt: skip
        # Answered, not approved: no kagent confirmation, no approve/reject form.
        assert [kind_of(p)[0] for p in data_parts(status)] == [
            "signoff.approvals",
            "signoff.question",
        ]
        task = task_id(asked)

        with pytest.raises(InvalidParamsError) as misfit:
            await send(client, message(data={"answer": "mars"}, task=task))
        assert misfit.value.message == "answer: not one of ['eu-west', 'us-east']; nothing changed"
        with pytest.raises(InvalidParamsError, match="colour: not part of an answer"):
            await send(client, message(data={"answer": "eu-west", "colour": 1}, task=task))
        stored = await get_task(client, task)
        assert stored["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"

        answered = await send(client, message(data={"answer": "us-east"}, task=task))
        assert states(answered)[-1] == "completed"
        done = await get_task(client, task)
        told = json.loads(words(done["status"]).removeprefix("done: "))
        assert told == {"status": "answered", "answer": "us-east", "answered_by": "alice"}

        with pytest.raises(UnsupportedOperationError) as second:
            await send(client, message(data={"answer": "eu-west"}, task=task))
        assert f"its question {question['approvalId']} was answered by 'alice'" in (
            second.value.message
        )
        assert await get_task(client, task) == done


async def test_the_reply_s_text_answers_and_only_an_approver_may_answer(
    store: SQLStore, side: Path
):
    async with serving(store) as (url, _):
        async with connect(url, streaming=False) as alice:
            [asked] = await send(alice, message("ask Where to?"))
            task = asked["task"]["id"]
        async with connect(url, token="bob-token", streaming=False) as bob:
            with pytest.raises(InvalidRequestError, match="nothing changed"):
                await send(bob, message("eu-west", task=task))
        async with connect(url, streaming=False) as alice:
            with pytest.raises(InvalidParamsError, match="answer: not one of"):
                await send(alice, message("somewhere warm", task=task))
            [done] = await send(alice, message("eu-west", task=task))
            assert done["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
            told = json.loads(words(done["task"]["status"]).removeprefix("done: "))
            assert told == {"status": "answered", "answer": "eu-west", "answered_by": "alice"}
            decided = [
                p["data"]
                for m in done["task"]["history"]
                for p in data_parts(m)
                if p["data"].get("type") == "signoff.decision"
            ]
            assert [(d["status"], d["decidedBy"]) for d in decided] == [("answered", "alice")]
