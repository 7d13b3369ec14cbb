"""The A2A decision vocabularies, read without a server: what each accepts and the words of each
refusal."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from signoff.protocols.a2a.decisions import Answer, LateDecision, PayloadError, read_decisions
from signoff.protocols.a2a.hitl import Pending, request_parts
from signoff.types import Answer as Answered
from signoff.types import Approve, Edit, Reject, Respond, Scope

A = Pending(
    approval_id="ap-a", call_id="c-a", tool="delete_pod", args={"name": "a"}, agent="ops",
    rule="rules[0]", reason="deleting is forever", expires_at="2026-11-23T10:00:00+00:00",
)  # fmt: skip
B = Pending(
    approval_id="ap-b", call_id="c-b", tool="scale", args={"name": "b", "replicas": 3},
    agent="ops/db", rule=None, reason="approval required: scale", expires_at=None,
)  # fmt: skip


def answer(data: Any, *, decided: dict[str, str] | None = None, form: str = "f-1") -> Answer:
    return read_decisions([{"data": data}], [A, B], decided=decided or {}, form_id=form)


def read(data: Any, *, decided: dict[str, str] | None = None, form: str = "f-1") -> Any:
    return answer(data, decided=decided, form=form).decisions


def test_the_request_says_it_in_words_a_listing_kagent_calls_and_a_form():
    text, listing, confirm_a, confirm_b, form = request_parts([A, B], agent="ops", form_id="f-1")
    assert text["text"].startswith("ops wants to make 2 tool calls that need your approval:")
    assert (
        '1. delete_pod(name="a") — rule rules[0]: deleting is forever (until 2026-11-23'
        in (text["text"])
    )
    assert [a["approvalId"] for a in listing["data"]["approvals"]] == ["ap-a", "ap-b"]
    assert listing["data"]["approvals"][1]["agent"] == "ops/db"
    assert confirm_a == {
        "data": {
            "name": "adk_request_confirmation",
            "id": "ap-a",
            "args": {
                "originalFunctionCall": {"name": "delete_pod", "args": {"name": "a"}, "id": "c-a"},
                "toolConfirmation": {
                    "hint": "deleting is forever",
                    "confirmed": False,
                    "payload": None,
                },
            },
        },
        "metadata": {"type": "function_call", "is_long_running": True},
    }
    assert confirm_b["data"]["args"]["originalFunctionCall"]["id"] == "c-b"
    assert form["data"]["formId"] == "f-1" and form["data"]["title"] == "Approve 2 tool calls?"
    assert [f["name"] for f in form["data"]["fields"]] == [
        "ap-a",
        "ap-a.reason",
        "ap-b",
        "ap-b.reason",
    ]


def test_kagent_decides_the_whole_batch():
    assert read({"decision_type": "approve"}) == {"ap-a": Approve(), "ap-b": Approve()}
    assert read({"decision_type": "deny", "reason": "no"}) == {
        "ap-a": Reject(reason="no"), "ap-b": Reject(reason="no"),
    }  # fmt: skip
    assert read({"decision_type": "deny"}) == {"ap-a": Reject(reason=""), "ap-b": Reject(reason="")}


def test_per_call_decisions_take_every_kind_by_approval_or_call_id():
    decided = read(
        {
            "decisions": {
                "ap-a": {"kind": "approve", "always": {"scope": "thread"}},
                "c-b": {"kind": "edit", "args": {"name": "b", "replicas": 4}},
            }
        }
    )
    assert decided == {
        "ap-a": Approve(always=Scope(kind="thread")),
        "ap-b": Edit(args={"name": "b", "replicas": 4}),
    }
    answered = {"ap-a": "approve", "ap-b": {"kind": "respond", "content": "4"}}
    assert read({"decisions": answered}) == {
        "ap-a": Approve(), "ap-b": Respond(content="4"),
    }  # fmt: skip


def test_a_form_response_takes_choices_and_reasons():
    values = {"ap-a": "approve", "ap-b": "reject", "ap-b.reason": "too many", "ap-a.reason": ""}
    assert read({"type": "a2a.hitl.formResponse", "formId": "f-1", "values": values}) == {
        "ap-a": Approve(), "ap-b": Reject(reason="too many"),
    }  # fmt: skip


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"say": "yes"}, "this task waits for a decision on 2 tool calls: ap-a (delete_pod), ap-b"),
        ({"decision_type": "ok"}, "decision_type must be 'approve' or 'deny', not \"ok\""),
        ({"decision_type": "deny", "reason": 7}, "'reason' must be a string"),
        ({"decisions": []}, "'decisions' must be an object"),
        ({"decisions": {"ap-a": "approve"}}, "left out: ap-b (scale)"),
        (
            {"decisions": {"ap-a": "maybe", "ap-b": "approve"}},
            'decisions.ap-a: "maybe" is not one of',
        ),
        (
            {"decisions": {"ap-a": {"kind": "respond"}, "ap-b": "approve"}},
            "a response needs 'content'",
        ),
        (
            {"decisions": {"ap-a": {"kind": "approve", "colour": 1}, "ap-b": "approve"}},
            "decisions.ap-a.colour: Extra inputs are not permitted",
        ),
        ({"decisions": {"ap-a": "approve", "c-a": "reject", "ap-b": "approve"}}, "decided twice"),
        (
            {"decisions": {"ap-z": "approve", "ap-a": "approve", "ap-b": "approve"}},
            "this task holds no call ap-z; it waits on ap-a, ap-b",
        ),
        ({"type": "a2a.hitl.formResponse", "formId": "f-0", "values": {}}, 'formId "f-0" is not'),
        ({"type": "a2a.hitl.formResponse", "formId": "f-1"}, "needs 'values'"),
        (
            {"type": "a2a.hitl.formResponse", "formId": "f-1", "values": {"ap-a.reason": 3}},
            "values.ap-a.reason must be a string",
        ),
    ],
)
def test_what_cannot_be_taken_is_refused_with_words_saying_why(data: Any, words: str):
    with pytest.raises(PayloadError) as refused:
        read(data)
    assert words in str(refused.value)


def test_each_vocabulary_carries_the_versions_the_calls_were_seen_at():
    kagent = answer({"decision_type": "approve", "versions": {"ap-a": 2, "c-b": 1}})
    assert kagent.versions == {"ap-a": 2, "ap-b": 1}
    per_call = answer({"decisions": {"ap-a": {"kind": "approve", "version": 3}, "c-b": "reject"}})
    assert per_call.versions == {"ap-a": 3}
    values = {"ap-a": "approve", "ap-a.version": 2, "ap-b": "reject", "ap-b.version": "1"}
    form = answer({"type": "a2a.hitl.formResponse", "formId": "f-1", "values": values})
    assert form == Answer(
        decisions={"ap-a": Approve(), "ap-b": Reject(reason="")}, versions={"ap-a": 2, "ap-b": 1}
    )
    assert answer({"decision_type": "approve"}).versions == {}  # none named: as before
    # A2A's protobuf carries every number of a data part as a float.
    assert answer({"decision_type": "approve", "versions": {"ap-a": 2.0}}).versions == {"ap-a": 2}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"decision_type": "approve", "versions": [1]}, "'versions' must be an object"),
        ({"decision_type": "approve", "versions": {"ap-a": 0}}, "versions.ap-a: 0 is not a"),
        ({"decision_type": "approve", "versions": {"ap-a": True}}, "versions.ap-a: true is not"),
        ({"decision_type": "approve", "versions": {"ap-a": 1.5}}, "versions.ap-a: 1.5 is not"),
        ({"decision_type": "approve", "versions": {"ap-z": 1}}, "this task holds no call ap-z"),
        (
            {"decision_type": "approve", "versions": {"ap-a": 1, "c-a": 2}},
            "c-a: the message names two versions of the call",
        ),
        (
            {"decisions": {"ap-a": {"kind": "approve", "version": 0}, "ap-b": "approve"}},
            "decisions.ap-a.version: 0 is not a version",
        ),
        (
            {
                "type": "a2a.hitl.formResponse", "formId": "f-1",
                "values": {"ap-a": "approve", "ap-b": "approve", "ap-a.version": "two"},
            },
            'values.ap-a.version: "two" is not a version',
        ),
    ],
)  # fmt: skip
def test_what_is_not_a_version_is_refused_with_words_saying_why(data: Any, words: str):
    with pytest.raises(PayloadError) as refused:
        read(data)
    assert words in str(refused.value)


def test_the_request_shows_each_calls_version_and_after_an_edit_both_argument_sets():
    edited = replace(
        B, version=2, args={"name": "b", "replicas": 9},
        requested_args={"name": "b", "replicas": 3},
        changes=({"version": 2, "kind": "edit", "by": "olga", "at": "…"},),
        changed="edited by olga at 10:02:11 UTC: replicas 3 → 9",
    )  # fmt: skip
    text, listing, _, _, form = request_parts([replace(A, version=1), edited], agent="ops",
                                              form_id="f-1")  # fmt: skip
    first, second = listing["data"]["approvals"]
    assert first["version"] == 1 and "requestedArgs" not in first and "changes" not in first
    assert (second["version"], second["args"], second["requestedArgs"]) == (
        2, {"name": "b", "replicas": 9}, {"name": "b", "replicas": 3},
    )  # fmt: skip
    assert [c["by"] for c in second["changes"]] == ["olga"]
    assert "Changed while it waited: edited by olga at 10:02:11 UTC: replicas 3 → 9" in text["text"]
    hidden = {f["name"]: f["value"] for f in form["data"]["fields"] if f["type"] == "hidden"}
    assert hidden == {"ap-a.version": 1, "ap-b.version": 2}


def test_two_decision_parts_are_one_too_many():
    parts = [{"data": {"decision_type": "approve"}}, {"data": {"decision_type": "deny"}}]
    with pytest.raises(PayloadError, match="send one decision part, not 2"):
        read_decisions(parts, [A], decided={}, form_id="f")


def test_a_decision_on_a_call_decided_already_is_late():
    with pytest.raises(LateDecision) as late:
        read({"decisions": {"ap-a": "approve", "ap-b": "approve", "ap-c": "reject"}},
             decided={"ap-c": "approved"})  # fmt: skip
    assert str(late.value) == "already decided, nothing changed: ap-c (approved)"
    assert late.value.data == {"decided": ["ap-c"]}


def test_a_task_shows_arguments_masked_whole_when_they_are_not_an_object():
    from datetime import UTC, datetime

    from signoff.protocols.a2a.tasks import TaskView
    from signoff.redaction import MASK, Redaction
    from signoff.store.runs import StoredEvent

    at = datetime(2026, 11, 23, tzinfo=UTC)
    raw = '{"name": "topsecret", '  # a model's unparsable arguments, kept as text
    view = TaskView(run_id="r", agent="ops", context_id="t", redaction=Redaction(["token"]))
    call = {"id": "c1", "name": "delete_pod", "args": raw, "server": None, "agent": "ops"}
    held = {"approval_id": "a1", "call_id": "c1", "tool": "delete_pod", "args": raw,
            "agent": "ops", "rule": None, "reason": "asks", "expires_at": None}  # fmt: skip
    events: list[tuple[str, dict[str, Any]]] = [
        ("tool_call", call), ("approval_requested", held), ("paused", {"approvals": ["a1"]}),
    ]  # fmt: skip
    shown = [
        view.see(StoredEvent(run_id="r", seq=n, at=at, type=kind, data=data))
        for n, (kind, data) in enumerate(events, 1)
    ]
    assert shown[1] is None and view.state == "input-required"
    assert "topsecret" not in str([u.message for u in shown if u is not None])
    assert shown[0] is not None and shown[0].message is not None
    assert shown[0].message["parts"][0]["data"]["args"] == MASK


Q = Pending(
    approval_id="ap-q", call_id="c-q", tool="ask_person", agent="ops", rule=None,
    reason="a question waits for a person", expires_at=None, kind="question",
    args={"question": "How many?", "schema": {"type": "object", "properties": {
        "n": {"type": "integer"}}}},
)  # fmt: skip


def test_a_question_is_answered_by_the_reply_s_text_or_an_answer_part():
    def read_q(*parts: dict[str, Any], pending: list[Pending] | None = None) -> Any:
        return read_decisions(list(parts), pending or [Q], decided={}, form_id="f").decisions

    assert read_q({"text": " four "}) == {"ap-q": Answered(value="four")}
    # A2A carries every number as a float: a whole one is answered as a whole number.
    assert read_q({"data": {"answer": {"n": 4.0}, "version": 2.0}}) == {
        "ap-q": Answered(value={"n": 4})
    }
    with pytest.raises(PayloadError, match="left out: ap-a"):
        read_q({"text": "four"}, pending=[A, Q])
    with pytest.raises(PayloadError, match="waits on 2 questions"):
        read_q({"data": {"answer": "four"}}, pending=[Q, replace(Q, approval_id="ap-r")])
    with pytest.raises(PayloadError, match="waits for a decision on 1 tool call"):
        read_q({"text": "four"}, pending=[A])  # no question: words decide nothing


def test_a_task_that_asks_shows_the_question_and_no_approve_form():
    text, listing, question = request_parts([Q], agent="ops", form_id="f")
    assert text["text"].startswith("ops asks you:\n1. How many? — a form: n")
    assert listing["data"]["approvals"][0]["kind"] == "question"
    assert question["data"]["schema"] == Q.args["schema"]
