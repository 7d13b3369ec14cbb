"""The store's clock and the policy of now, across real `signoff serve` replicas: one whose clock
runs an hour ahead (libfaketime) decides nothing early, and a policy saved on one replica is the
one every replica decides by — at once, not at its next look."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff import Approve
from signoff.errors import StaleDecisionError
from tests.deadline import HANG
from tests.installed import library
from tests.processes import signoff_server

ROOT = Path(__file__).resolve().parents[2]

CONFIG = """\
database: {database}
auth:
  tokens:
    - {{principal: olga, roles: [ops, admin], token_env: SIGNOFF_TEST_OLGA}}
    - {{principal: sam, roles: [security], token_env: SIGNOFF_TEST_SAM}}
    - {{principal: vic, roles: [], token_env: SIGNOFF_TEST_VIC}}
rules:
  - ask: delete_pod
    approvers: [ops]
    escalate: [{{after: 20m, to: [security]}}]
    on_timeout: {{after: 30m, decide: approve, despite_approvers: true}}
"""
OLGA, SAM, VIC = ({"Authorization": f"Bearer {t}"} for t in ("olga-t", "sam-t", "vic-t"))

Replica = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def replica(tmp_path: Path) -> Replica:
    """A `signoff serve` of the config on `database`, its clock `ahead` of this machine's;
    yields an API client of it (no token: each request names its own)."""

    @asynccontextmanager
    async def start(database: str, *, ahead: str | None = None) -> AsyncIterator[httpx.AsyncClient]:
        config = tmp_path / "signoff.yaml"
        config.write_text(CONFIG.format(database=database))
        env = os.environ | {
            "SIGNOFF_TEST_OLGA": "olga-t",
            "SIGNOFF_TEST_SAM": "sam-t",
            "SIGNOFF_TEST_VIC": "vic-t",
            "SIGNOFF_TEST_SIDE_FILE": str(tmp_path / "side.txt"),
            "PYTHONPATH": str(ROOT),
        }
        if ahead is not None:
            env |= {
                "LD_PRELOAD": library("faketime/libfaketime.so.1", "libfaketime"),
                "FAKETIME": ahead,
            }
        arguments = ["serve", "--config", str(config), "--port", "0",
                     "--agents", "tests.server.serve_agents:agents"]  # fmt: skip
        async with (
            signoff_server(*arguments, env=env, cold=ahead is not None) as (url, _),
            httpx.AsyncClient(base_url=url, timeout=HANG) as client,
        ):
            yield client

    return start


async def held(client: httpx.AsyncClient, pod: str) -> dict[str, Any]:
    """A run on `client`'s replica that asks to delete `pod`: its pending approval."""
    run = (
        await client.post(
            f"/v1/threads/{pod}/runs",
            params={"wait": 30},
            json={"agent": "ops", "input": f"delete {pod}"},
            headers=OLGA,
        )
    ).json()
    [approval_id] = run["pending_approvals"]
    found: dict[str, Any] = (await client.get(f"/v1/approvals/{approval_id}", headers=OLGA)).json()
    return found


def ran(tmp_path: Path) -> list[str]:
    side = tmp_path / "side.txt"
    return side.read_text().split() if side.exists() else []


async def test_a_replica_an_hour_ahead_decides_nothing_early(
    replica: Replica, postgres_url: str, tmp_path: Path
):
    async with (
        replica(postgres_url) as on_time,
        replica(postgres_url, ahead="+1h") as ahead,
    ):
        faked = (await ahead.get("/v1/health")).headers["date"]
        assert faked != (await on_time.get("/v1/health")).headers["date"]  # it does run ahead
        approval = await held(on_time, "web-1")
        url = f"/v1/approvals/{approval['id']}/decision"
        # A viewer may not decide: the refusal triggers nothing — no lapse, no approval on
        # timeout, however late this replica's clock says it is.
        refused = await ahead.post(url, json={"kind": "reject", "reason": "x"}, headers=VIC)
        assert refused.status_code == 403, refused.text
        # Nor is it escalated yet to security.
        early = await ahead.post(url, json={"kind": "approve"}, headers=SAM)
        assert early.status_code == 403, early.text
        stored = (await on_time.get(f"/v1/approvals/{approval['id']}", headers=OLGA)).json()
        assert (stored["status"], stored["escalated"]) == ("pending", 0)
        assert ran(tmp_path) == []

        # Held by the replica ahead, a call is held at the database's time, for 30 minutes.
        other = await held(ahead, "web-2")
        requested = datetime.fromisoformat(other["requested_at"])
        assert abs(requested - datetime.now(UTC)) < timedelta(minutes=10)
        expires = datetime.fromisoformat(other["expires_at"])
        assert expires - requested == timedelta(minutes=30)

        # An approver decides the first on the replica ahead, and it runs once.
        done = await ahead.post(url, json={"kind": "approve", "version": stored["version"]},
                                headers=OLGA)  # fmt: skip
        assert done.json()["status"] == "approved", done.text
        async with asyncio.timeout(HANG):
            while not ran(tmp_path):
                await asyncio.sleep(0.05)
        assert ran(tmp_path)[1::2] == ["web-1"]


async def test_a_policy_saved_on_one_replica_is_what_the_other_decides_by(
    replica: Replica, store_url: str, tmp_path: Path
):
    async with replica(store_url) as a, replica(store_url) as b:
        waiting = await held(b, "web-1")
        approved = await held(b, "web-2")
        policy = (await a.get("/v1/policy", headers=OLGA)).json()
        document = policy["document"]

        # web-2 is approved (it runs later: its run's worker is held back by nothing but time).
        deny = {**document, "rules": [{"deny": "delete_pod", "when": {"name": {"eq": "web-1"}},
                                       "reason": "web-1 is production"},
                                      *document["rules"]]}  # fmt: skip
        saved = await a.put("/v1/policy", json={"document": deny, "version": policy["version"]},
                            headers=OLGA)  # fmt: skip
        assert saved.status_code == 200, saved.text

        # At once, on B — which has not looked for a new policy yet: the approval of web-1 is
        # judged by the policy A saved, which denies it.
        url = f"/v1/approvals/{waiting['id']}/decision"
        answer = await b.post(url, json={"kind": "approve", "version": 1}, headers=OLGA)
        assert answer.status_code in (403, 409), answer.text
        stored = (await b.get(f"/v1/approvals/{waiting['id']}", headers=OLGA)).json()
        assert (stored["status"], stored["decided_by"]) == ("rejected", "signoff")
        assert "web-1 is production" in stored["decision"]["reason"]
        # A call the policy still asks about goes on as before.
        other = f"/v1/approvals/{approved['id']}/decision"
        assert (await b.post(other, json={"kind": "approve"}, headers=OLGA)).is_success
        async with asyncio.timeout(HANG):
            while ran(tmp_path)[1::2] != ["web-2"]:
                await asyncio.sleep(0.05)
        # web-1 never ran, and its run was told why.
        run = (await b.get(f"/v1/runs/{waiting['run_id']}", headers=OLGA)).json()
        async with asyncio.timeout(HANG):
            while run["status"] != "completed":
                await asyncio.sleep(0.05)
                run = (await b.get(f"/v1/runs/{waiting['run_id']}", headers=OLGA)).json()
        assert "web-1 is production" in str(run["messages"])
        assert ran(tmp_path)[1::2] == ["web-2"]


async def test_a_policy_put_in_force_whose_judging_of_waiting_calls_failed_is_followed_still(
    store_url: str,
):
    """A replica installed a new policy and died (or failed) before judging the waiting calls
    by it: the next decision of one of them writes what the policy says of it, and is not taken
    on the rule it replaced."""
    from signoff import Policy, ToolCall
    from signoff.gate import CheckContext, Gate
    from signoff.server import Service
    from signoff.store import open_store

    before = {"rules": [{"ask": "drain", "approvers": ["ops"]}]}
    after = {"rules": [{"ask": "drain", "approvers": ["ops"], "approvals": {"count": 2}}]}
    async with open_store(store_url) as store:
        service = Service(store=store, gate=Gate(Policy.from_dict(before), store), agents=[],
                          policy_document=before)  # fmt: skip
        await service.set_policy(before, actor="admin")
        context = CheckContext(thread_id="t", requested_by="bob", origin="langgraph")
        call = ToolCall(id="c1", name="drain", args={"node": "n1"})
        [outcome] = await service.gate.check([call], context)
        assert outcome.approval is not None
        policy = Policy.from_dict(after)
        await store.save_policy(policy.version, after, actor="admin", at=await store.clock())
        service._install(policy, after)  # put in force; the waiting calls not judged by it
        # Alone, olga would have approved it under the rule it replaced: it needs two now.
        with pytest.raises(StaleDecisionError, match="judged again"):
            await service.decide(outcome.approval.id, Approve(), actor="olga", roles={"ops"})
        stored = await store.get_approval(outcome.approval.id)
        assert (stored.status, stored.votes) == ("pending", ())
        assert stored.quorum is not None and stored.quorum.count == 2
        voted = await service.decide(
            outcome.approval.id, Approve(), actor="olga", roles={"ops"}, version=stored.version
        )
        assert (voted.status, [v.by for v in voted.votes]) == ("pending", ["olga"])
