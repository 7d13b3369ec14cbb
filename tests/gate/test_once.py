"""`Ledger` and its claims: a worker whose claim was taken over records nothing (fencing)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import pytest

from signoff import Policy, ToolCall
from signoff.errors import ClaimLost
from signoff.gate import Gate
from signoff.gate.external import ExternalRuns
from signoff.gate.once import Claim, Ledger
from signoff.store import SQLStore
from tests.deadline import HANG


async def taken_over(store: SQLStore) -> tuple[Claim, Claim]:
    """A claim whose lease has run out (a zero lease: out as soon as it is made), and the claim
    of a second worker that took the key over, as an idempotent call run again does."""
    first = await Ledger(store, lease=timedelta(0)).claim("k", idempotent=True)
    second = await Ledger(store).claim("k", idempotent=True)
    assert isinstance(first, Claim) and isinstance(second, Claim)
    assert second.fence == first.fence + 1
    return first, second


async def never() -> str:
    raise AssertionError("a recorded call ran again")


@pytest.mark.parametrize("record", ["finish", "fail"])
async def test_a_worker_whose_claim_was_taken_over_cannot_replace_the_new_holders_result(
    store: SQLStore, record: str, caplog: pytest.LogCaptureFixture
):
    first, second = await taken_over(store)
    await second.finish("sent by the second")
    recorded = (
        first.finish("sent by the first")
        if record == "finish"
        else first.fail(RuntimeError("the first broke"))
    )
    with (
        caplog.at_level(logging.WARNING, logger="signoff.gate.once"),
        pytest.raises(ClaimLost, match="the ledger key 'k' is no longer held by claim 1"),
    ):
        await recorded
    assert first.lost.is_set()
    assert "was not recorded" in caplog.text  # the loss is told, not only raised
    assert await Ledger(store).once("k", never) == "sent by the second"


async def test_a_claim_taken_over_while_its_call_runs_learns_it_from_its_renewal(
    store: SQLStore,
):
    first, second = await taken_over(store)
    async with asyncio.timeout(HANG):
        await first.lost.wait()  # its next renewal finds the key another's
    assert not second.lost.is_set()
    await first.abandon()  # fenced too: the new holder's claim does not end with it
    with pytest.raises(TimeoutError):  # still running under the second's claim, not unknown
        await Ledger(store).claim("k", wait=0)
    await second.finish("sent by the second")
    assert await Ledger(store).once("k", never) == "sent by the second"


async def test_an_integration_whose_claim_was_taken_over_gets_the_result_that_stands(
    store: SQLStore,
):
    gate = Gate(Policy.from_dict({"rules": [{"allow": "send_email"}]}), store)
    runs = ExternalRuns(gate, origin="langgraph")
    call = ToolCall(id="c1", name="send_email", args={"to": "a@example.com"})
    await runs.judge([call], thread="t1")
    key = runs.key("t1", "c1")
    first = await Ledger(store, lease=timedelta(0)).claim(key, idempotent=True)
    second = await Ledger(store).claim(key, idempotent=True)
    assert isinstance(first, Claim) and isinstance(second, Claim)
    await second.finish("sent by the second")

    # The first worker's call ran too; its record is refused, and it is told what stands —
    # never left with an error after the tool ran.
    assert await runs.finish(first, "sent by the first") == "sent by the second"
    await runs.fail(first, RuntimeError("and then it broke"))  # fenced: nothing replaced
    assert await runs.once(key, call, never) == "sent by the second"
