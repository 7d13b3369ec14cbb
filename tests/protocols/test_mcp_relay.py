"""What a server behind the MCP gateway asks of its client before it answers reaches the client
that made the call, and the client's answer goes back — over 2026-07-28 inside the result (an
input-required result and the call made again), over 2025-11-25 in the middle of the call. The
official `mcp` client, in-process, in front of the SDK server of `mcp_upstream.py` (its
``transfer`` asks to confirm and counts each ask and each real send), on both stores."""

from __future__ import annotations

import contextlib
import contextvars
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY

from signoff import Policy
from signoff.gate import Gate
from signoff.protocols.mcp.gateway import Gateway
from signoff.protocols.mcp.relay import MAX_INPUT_KEY, MAX_INPUTS, MAX_STATE
from signoff.protocols.mcp.request import Asker
from signoff.protocols.mcp.settings import GatewaySettings, UpstreamSpec
from signoff.protocols.mcp.upstream import Upstream
from signoff.store import SQLStore
from tests.deadline import HANG
from tests.protocols.test_mcp_dialog import ran, text

UPSTREAM = Path(__file__).with_name("mcp_upstream.py")
CONFIRM = types.ElicitResult(action="accept", content={"confirm": True})
APPROVE = types.ElicitResult(action="accept", content={"decision": "approve"})


@contextlib.asynccontextmanager
async def fronting(
    store: SQLStore, counted: Path, policy: dict[str, Any], **chosen: Any
) -> AsyncIterator[Gateway]:
    spec = UpstreamSpec(
        name="up", command=sys.executable, args=(str(UPSTREAM), "stdio"),
        env={"UPSTREAM_COUNT_FILE": str(counted)},
    )  # fmt: skip
    settings = GatewaySettings(principal="carol", wait=HANG, **chosen)
    front = Gateway(Gate(Policy.from_dict(policy), store), [Upstream(spec)], settings=settings)
    async with front.running():
        yield front


async def confirm(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return CONFIRM


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_servers_question_reaches_the_client_and_its_answer_goes_back(
    store: SQLStore, tmp_path: Path, mode: str
) -> None:
    """2026-07-28 (`auto`): the server's input-required result passed on, the client's retry
    carried back; 2025-11-25 (`legacy`): its ``elicitation/create`` in the middle of the call.
    Either way the server is asked once, sends once, and the relay is audited."""
    counted = tmp_path / "count.txt"
    asked: list[str] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return CONFIRM

    async with (
        fronting(store, counted, {"default": "allow"}) as front,
        Client(front.server, mode=mode, elicitation_callback=person) as client,
    ):
        result = await client.call_tool("transfer", {"to": "bob"})
        assert (client.protocol_version == "2026-07-28") == (mode == "auto")
    assert (text(result), asked, ran(counted)) == ("sent to bob", ["Send it to bob?"],
                                                   ["asked bob", "sent bob"])  # fmt: skip
    audit = await store.audit_log()
    [relay] = [e.data for e in audit if e.action == "relay"]
    assert (relay["server"], relay["method"]) == ("up", "elicitation/create")
    forwards = [e for e in audit if e.action == "forward"]
    assert len(forwards) == (2 if mode == "auto" else 1)  # each request forwarded is audited


async def test_a_2026_client_that_cannot_answer_gets_the_servers_capability_error(
    store: SQLStore, tmp_path: Path
) -> None:
    """The client's own capabilities go with its request: declaring no elicitation, it gets
    the server's -32021 as that error, not as a tool's failure (where the server's questions
    are the client's alone: ``server_questions: client``)."""
    counted = tmp_path / "count.txt"
    async with (
        fronting(store, counted, {"default": "allow"}, server_questions="client") as front,
        Client(front.server, mode="auto") as client,
    ):
        with pytest.raises(MCPError) as refused:
            await client.call_tool("transfer", {"to": "bob"})
    assert refused.value.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert ran(counted) == []


async def test_a_2025_client_on_the_shared_connection_is_told_why_it_cannot_answer(
    store: SQLStore, tmp_path: Path
) -> None:
    """Past `sessions`, a 2025-era client shares the gateway's connection, which declares none
    of its capabilities: the server's -32021 says so, though the client declared elicitation."""
    counted = tmp_path / "count.txt"
    async with (
        fronting(store, counted, {"default": "allow"}, sessions=0) as front,
        Client(front.server, mode="legacy", elicitation_callback=confirm) as client,
    ):
        with pytest.raises(MCPError, match=r"past gateway\.sessions") as refused:
            await client.call_tool("transfer", {"to": "bob"})
    assert refused.value.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert ran(counted) == []


async def test_an_approval_and_the_servers_question_share_a_round_trip_the_approval_first(
    store: SQLStore, tmp_path: Path
) -> None:
    """The policy asks about ``transfer``: the first answer is signoff's form, and nothing
    reaches the server before the person approves. The retry with the approval brings the
    server's own question back at once; the retry with its answer sends, once — the same
    retry again, or another answer to the same question, gets that answer and sends nothing
    more."""
    counted = tmp_path / "count.txt"
    policy = {"default": "allow", "rules": [{"ask": "transfer"}]}
    async with (
        fronting(store, counted, policy) as front,
        Client(front.server, mode="auto", elicitation_callback=confirm) as client,
    ):
        session, args = client.session, {"to": "bob"}

        async def call(**again: Any) -> Any:
            return await session.call_tool("transfer", args, allow_input_required=True, **again)

        form = await call()
        assert isinstance(form, types.InputRequiredResult) and form.input_requests is not None
        assert list(form.input_requests) == ["approval"] and ran(counted) == []

        approved: types.InputResponses = {"approval": APPROVE}
        question = await call(input_responses=approved, request_state=form.request_state)
        assert isinstance(question, types.InputRequiredResult)
        assert question.input_requests is not None and list(question.input_requests) == ["confirm"]
        assert ran(counted) == ["asked bob"]

        answered: types.InputResponses = {"confirm": CONFIRM}
        assert question.request_state is not None
        done = await call(input_responses=answered, request_state=question.request_state)
        again = await call(input_responses=answered, request_state=question.request_state)
        # Other answers to the same question: the call took its path through the server's
        # questions; they get where it led, and it does not run a second time.
        declined: types.InputResponses = {"confirm": types.ElicitResult(action="decline")}
        other = await call(input_responses=declined, request_state=question.request_state)
        assert text(done) == text(again) == text(other) == "sent to bob"
        assert ran(counted) == ["asked bob", "sent bob"]

        with pytest.raises(MCPError) as tampered:
            await call(input_responses=answered, request_state=question.request_state + "x")
        assert tampered.value.error.code == INVALID_PARAMS
        with pytest.raises(MCPError, match="requestState"):  # the state is for bob's transfer
            await session.call_tool(
                "transfer", {"to": "eve"}, allow_input_required=True,
                input_responses=answered, request_state=question.request_state,
            )  # fmt: skip
    [approval] = await store.list_approvals()
    assert (approval.status, approval.decided_by) == ("approved", "carol")
    assert ran(counted) == ["asked bob", "sent bob"]
    forwards = [e.data for e in await store.audit_log() if e.action == "forward"]
    assert [f["approval"] for f in forwards] == [approval.id, approval.id]


async def test_a_server_state_too_long_to_carry_is_refused_saying_so(
    store: SQLStore, tmp_path: Path
) -> None:
    counted = tmp_path / "count.txt"
    async with (
        fronting(store, counted, {"default": "allow"}) as front,
        Client(front.server, mode="auto", elicitation_callback=confirm) as client,
    ):
        result = await client.call_tool("transfer", {"to": "bob", "pad": MAX_STATE})
    assert result.is_error
    assert f"the gateway carries at most {MAX_STATE}" in text(result)
    assert ran(counted) == ["asked bob"]
    assert json.dumps(MAX_STATE) in text(result)


@pytest.mark.parametrize(
    ("also", "said"),
    [
        ([f"also{n}" for n in range(MAX_INPUTS)], f"passes on at most {MAX_INPUTS}"),
        (["k" * (MAX_INPUT_KEY + 1)], f"with a key longer than {MAX_INPUT_KEY} characters"),
    ],
)
async def test_a_server_asking_too_much_at_once_is_refused_saying_so_and_nothing_audited(
    store: SQLStore, tmp_path: Path, also: list[str], said: str
) -> None:
    """Each input request passed on is audited: a server asking more than the gateway passes
    on at once, or naming one by a key longer than it keeps, gets the call refused."""
    counted = tmp_path / "count.txt"
    async with (
        fronting(store, counted, {"default": "allow"}) as front,
        Client(front.server, mode="auto", elicitation_callback=confirm) as client,
    ):
        result = await client.call_tool("transfer", {"to": "bob", "also": also})
    assert result.is_error and said in text(result)
    assert ran(counted) == ["asked bob"]
    assert [e for e in await store.audit_log() if e.action == "relay"] == []


async def test_a_servers_state_goes_back_to_that_server_only(
    store: SQLStore, tmp_path: Path
) -> None:
    """A read goes to whichever server lists its URI now: once ``a``, which asked, no longer
    lists it, the retry carrying ``a``'s request state is refused, not handed to ``b``."""
    listed = {name: tmp_path / f"{name}.lists" for name in ("a", "b")}
    for flag in listed.values():
        flag.touch()
    specs = [
        UpstreamSpec(
            name=name,
            command=sys.executable,
            args=(str(UPSTREAM), "stdio"),
            env={"UPSTREAM_NAME": name, "UPSTREAM_ASKED_FILE": str(flag)},
        )
        for name, flag in listed.items()
    ]
    gate = Gate(Policy.from_dict({"default": "allow"}), store)
    front = Gateway(gate, [Upstream(s) for s in specs], settings=GatewaySettings(principal="carol"))
    async with (
        front.running(),
        Client(front.server, mode="auto", elicitation_callback=confirm) as client,
    ):
        session = client.session
        await session.list_resources()
        asked = await session.read_resource("memo://asked", allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        listed["a"].unlink()
        await session.list_resources()  # now b's
        with pytest.raises(MCPError, match="another server's") as refused:
            await session.read_resource(
                "memo://asked", allow_input_required=True,
                input_responses={"confirm": CONFIRM}, request_state=asked.request_state,
            )  # fmt: skip
    assert refused.value.error.code == INVALID_PARAMS


async def test_a_servers_question_is_answered_only_by_whom_it_was_asked(
    store: SQLStore, tmp_path: Path
) -> None:
    """The policy lets anyone send: still, the state of carol's call goes back to the server
    only with carol's answers — mallory sending it back is refused, and nothing is sent."""
    counted = tmp_path / "count.txt"
    who: contextvars.ContextVar[str] = contextvars.ContextVar("who")
    spec = UpstreamSpec(
        name="up", command=sys.executable, args=(str(UPSTREAM), "stdio"),
        env={"UPSTREAM_COUNT_FILE": str(counted)},
    )  # fmt: skip
    gate = Gate(Policy.from_dict({"default": "allow"}), store)
    # In memory, a 2026-07-28 request is served in its sender's context: who sent it is who.
    front = Gateway(gate, [Upstream(spec)], asker=lambda _request: Asker(who.get()))
    async with (
        front.running(),
        Client(front.server, mode="auto", elicitation_callback=confirm) as client,
    ):
        session, args = client.session, {"to": "bob"}
        who.set("carol")
        asked = await session.call_tool("transfer", args, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        who.set("mallory")
        with pytest.raises(MCPError, match="requestState") as refused:
            await session.call_tool(
                "transfer", args, allow_input_required=True,
                input_responses={"confirm": CONFIRM}, request_state=asked.request_state,
            )  # fmt: skip
    assert refused.value.error.code == INVALID_PARAMS
    assert ran(counted) == ["asked bob"]
    relayed = [(e.action, e.actor) for e in await store.audit_log()]
    assert relayed == [("forward", "carol"), ("relay", "carol")]
