"""``signoff grants list|revoke`` on a database (the API behind ``--server`` is tested in
tests/server/test_trust_api.py)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from signoff import Approve, Policy, Scope, ToolCall
from signoff.gate import CheckContext, Gate
from signoff.store import open_store
from tests.cli.test_decide_cli import signoff

DOCUMENT = {"rules": [{"ask": "delete_pod", "approvers": ["ops"]}]}
POLICY = Policy.from_dict(DOCUMENT)


async def granted(url: str) -> str:
    async with open_store(url) as store:
        gate = Gate(POLICY, store)
        await store.save_policy(POLICY.version, DOCUMENT, actor="config", at=datetime.now(UTC))
        call = ToolCall(id="c", name="delete_pod", args={"name": "p1"})
        context = CheckContext(thread_id="t1", requested_by="carol")
        [held] = await gate.check([call], context)
        assert held.approval is not None
        always = Approve(always=Scope(kind="thread"))
        await gate.decide(held.approval.id, always, actor="olga", roles=["ops"])
        [through] = await gate.check([call], context)
        assert through.kind == "run"
        [grant] = await gate.grants()
        return grant.id


def test_grants_are_listed_and_revoked_on_a_database_and_the_revoke_is_audited(store_url: str):
    grant_id = asyncio.run(granted(store_url))
    code, out, err = signoff("grants", "list", "--database", store_url, "--json")
    assert (code, err) == (0, "")
    [item] = [json.loads(line) for line in out.splitlines()]
    assert {k: item[k] for k in ("id", "tool", "scope", "subject", "with_args", "granted_by")} == {
        "id": grant_id, "tool": "delete_pod", "scope": "thread", "subject": "t1",
        "with_args": True, "granted_by": "olga",
    }  # fmt: skip
    assert (item["uses"], item["status"]) == (1, "active")
    code, table, _ = signoff("grants", "list", "--database", store_url)
    assert code == 0 and grant_id in table and "active" in table
    assert "thread t1, calls carol requests" in table

    code, out, err = signoff("grants", "revoke", grant_id, "--database", store_url, "--as", "ann")
    assert (code, out, err) == (0, f"{grant_id}: revoked by ann (delete_pod)\n", "")
    code, out, _ = signoff("grants", "list", "--database", store_url)
    assert (code, out) == (0, "No grants.\n")
    code, out, _ = signoff("grants", "list", "--database", store_url, "--all", "--json")
    assert json.loads(out)["status"] == "revoked"
    code, out, _ = signoff("audit", "list", "--database", store_url, "--json")
    last = json.loads(out.splitlines()[-1])
    assert (last["action"], last["actor"], last["subject"]) == ("revoke", "ann", grant_id)

    code, _, err = signoff("grants", "revoke", "nope", "--database", store_url)
    assert code == 1 and "no grant with id 'nope'" in err


def test_a_grant_whose_rule_changed_is_listed_as_stale(store_url: str):
    asyncio.run(granted(store_url))

    async def stricter() -> None:
        async with open_store(store_url) as store:
            document = {"rules": [{"ask": "delete_pod", "approvers": ["security"]}]}
            version = Policy.from_dict(document).version
            await store.save_policy(version, document, actor="admin", at=datetime.now(UTC))

    asyncio.run(stricter())
    code, out, _ = signoff("grants", "list", "--database", store_url, "--json")
    assert (code, json.loads(out)["status"]) == (0, "stale")


def test_grants_need_a_server_or_a_database():
    code, _, err = signoff("grants", "list")
    assert code == 2 and "--server" in err
