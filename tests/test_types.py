"""The values every layer passes around."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest

from signoff import (
    Approve,
    Cancelled,
    Decision,
    Edit,
    Expired,
    InvalidArgumentsError,
    Reject,
    Respond,
    Scope,
    ToolCall,
)
from signoff.types import canonical_json


def test_the_digest_is_sha256_of_canonical_json_of_name_args_and_server():
    call = ToolCall(id="c1", name="delete_pod", args={"name": "nginx-123", "ns": "default"})
    expected = hashlib.sha256(
        b'["delete_pod",{"name":"nginx-123","ns":"default"},null]'
    ).hexdigest()
    assert call.digest == expected


def test_the_digest_ignores_key_order_and_the_call_id_but_not_the_server_or_values():
    a = ToolCall(id="1", name="t", args={"a": 1, "b": {"y": 2, "x": [1, "é"]}})
    b = ToolCall(id="2", name="t", args={"b": {"x": [1, "é"], "y": 2}, "a": 1})
    assert a.digest == b.digest
    assert a.digest != ToolCall(id="1", name="t", args=a.args, server="fs").digest
    assert a.digest != ToolCall(id="1", name="t", args={"a": 2, "b": a.args["b"]}).digest
    assert a.digest != ToolCall(id="1", name="u", args=a.args).digest


def test_canonical_json_is_compact_sorted_and_utf8():
    assert (
        canonical_json({"b": 1, "a": ["é", None, True, 1.5]})
        == '{"a":["é",null,true,1.5],"b":1}'.encode()
    )


@pytest.mark.parametrize("value", [{"x": float("nan")}, {"x": {1, 2}}, {"x": object()}])
def test_arguments_that_are_not_json_cannot_be_digested(value: dict[str, object]):
    with pytest.raises(InvalidArgumentsError, match="not representable as JSON"):
        ToolCall(id="c", name="t", args=value).digest  # noqa: B018


def test_decisions_are_tagged_by_kind():
    decisions: list[Decision] = [
        Approve(),
        Approve(always=Scope(kind="thread", with_args=True)),
        Edit(args={"a": 1}),
        Respond(content="done by hand"),
        Reject(reason="too risky"),
        Expired(),
        Cancelled(reason="run cancelled"),
    ]
    assert [d.kind for d in decisions] == [
        "approve", "approve", "edit", "respond", "reject", "expired", "cancelled",
    ]  # fmt: skip
    with pytest.raises(TypeError):
        Approve(kind="reject")  # type: ignore[call-arg]


def test_values_are_frozen():
    call = ToolCall(id="c", name="t")
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.name = "u"  # type: ignore[misc]
