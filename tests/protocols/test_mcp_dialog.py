"""The MCP gateway's form in the client is for one version of the call: the official `mcp` client,
in-process, in front of the SDK server of `mcp_upstream.py`, on both stores. When the call changes
in signoff after the client was shown it, the answer to the old form is not taken, and the client
is shown the call again as it stands, told what changed.

The form goes to the asker, who is the call's requester: a rule that needs two people never
counts the requester, so the gateway asks only in the inbox there. What changes a call that one
person decides while it waits is an assignment, an escalation or a new policy (an edit in the
inbox decides it) — here, olga hands it to bob."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types

from signoff import Policy
from signoff.gate import Gate
from signoff.protocols.mcp.dialog import Shown, shown_in
from signoff.protocols.mcp.gateway import Gateway
from signoff.protocols.mcp.settings import GatewaySettings, UpstreamSpec
from signoff.protocols.mcp.upstream import Upstream
from signoff.server import Service
from signoff.store import SQLStore
from tests.deadline import HANG

UPSTREAM = Path(__file__).with_name("mcp_upstream.py")
ASK = Policy.from_dict({"rules": [{"ask": "*"}]})
APPROVE = types.ElicitResult(action="accept", content={"decision": "approve"})


@contextlib.asynccontextmanager
async def fronting(store: SQLStore, counted: Path) -> AsyncIterator[tuple[Gateway, Service]]:
    """A gateway holding carol's calls, over `store`, in front of the SDK server (its `count`
    tool writes each real run to `counted`); and the service that changes them, as the inbox
    and the API do."""
    spec = UpstreamSpec(
        name="up", command=sys.executable, args=(str(UPSTREAM), "stdio"),
        env={"UPSTREAM_COUNT_FILE": str(counted)},
    )  # fmt: skip
    gate = Gate(ASK, store)
    service = Service(store=store, gate=gate, agents=[])
    front = Gateway(gate, [Upstream(spec)], settings=GatewaySettings(principal="carol", wait=HANG))
    async with front.running():
        yield front, service


def ran(counted: Path) -> list[str]:
    return counted.read_text().splitlines() if counted.exists() else []


def text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_approval_on_the_form_before_a_change_is_not_taken_and_the_form_comes_again(
    store: SQLStore, tmp_path: Path, mode: str
) -> None:
    """2025-11-25 (`legacy`: the form withdrawn or its answer refused, and shown again) and
    2026-07-28 (`auto`: the retry's answer, sealed with version 1, refused with a new form)."""
    counted = tmp_path / "count.txt"
    shown: list[str] = []
    when_shown: list[tuple[int, str | None, list[str]]] = []
    async with fronting(store, counted) as (front, service):

        async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            shown.append(params.message)
            [held] = await store.list_approvals(status="pending")
            when_shown.append((held.version, held.decided_by, ran(counted)))
            if len(shown) == 1:  # while carol looks at version 1, olga hands the call to bob
                await service.gate.assign(held.id, "bob", actor="olga", note="his server")
            return APPROVE

        async with Client(front.server, mode=mode, elicitation_callback=person) as client:
            result = await client.call_tool("count", {"note": "first"})
        [approval] = await store.list_approvals()

    assert not result.is_error and text(result) == "counted"
    first, second = shown
    assert "version 1" in first and '"note":"first"' in first
    assert "assigned to bob by olga" in second and "version 2" in second
    # carol's approval of version 1 wrote nothing and ran nothing: when she was shown the call
    # again it stood as olga left it.
    assert when_shown == [(1, None, []), (2, None, [])]
    assert (approval.status, approval.decided_by) == ("approved", "carol")
    assert ran(counted) == ["first"]


async def test_a_form_left_open_while_the_call_changes_is_withdrawn_and_shown_again(
    store: SQLStore, tmp_path: Path
) -> None:
    """2025-11-25: the form is open in the client when olga hands the call to bob in the inbox;
    it is withdrawn at once, and the call comes again, saying so."""
    counted = tmp_path / "count.txt"
    opened, withdrawn = asyncio.Event(), asyncio.Event()
    shown: list[str] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        shown.append(params.message)
        if len(shown) > 1:
            return APPROVE
        opened.set()
        try:
            await asyncio.Event().wait()  # carol is away
        except asyncio.CancelledError:
            withdrawn.set()
            raise
        return APPROVE

    async with (
        fronting(store, counted) as (front, service),
        Client(front.server, mode="legacy", elicitation_callback=person) as client,
    ):
        call = asyncio.create_task(client.call_tool("count", {"note": "first"}))
        await asyncio.wait_for(opened.wait(), HANG)
        [held] = await store.list_approvals(status="pending")
        await service.gate.assign(held.id, "bob", actor="olga")
        await asyncio.wait_for(withdrawn.wait(), HANG)
        result = await asyncio.wait_for(call, HANG)

    assert not result.is_error and ran(counted) == ["first"]
    assert shown[1].startswith("The call changed while you were asked: assigned to bob by olga")


def test_a_request_state_names_the_approval_and_the_version_its_form_showed() -> None:
    assert shown_in('{"approval": "a1", "version": 3}') == Shown(approval_id="a1", version=3)
    # Sealed before versions were (a form out across an upgrade): its answer names none.
    assert shown_in('{"approval": "a1"}') == Shown(approval_id="a1", version=None)
    for junk in ('["a1"]', '{"approval": 1}', '{"approval": "a1", "version": true}', "{"):
        with pytest.raises(ValueError, match="is not a request state of this gateway's"):
            shown_in(junk)
