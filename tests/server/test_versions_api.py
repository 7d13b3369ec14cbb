"""What you see is what you approve, through the API: a decision names the version of the call it
was made on (its body's ``version``, or ``If-Match``), and one made on a version that changed
since is refused — 409 naming what changed — writing nothing."""

from __future__ import annotations

import contextlib
from typing import Any

import httpx

from signoff import Policy, ToolCall
from signoff.gate import CheckContext, Gate
from signoff.redaction import MASK, Redaction
from signoff.server import Principal, Service
from signoff.store import SQLStore
from tests.server.test_policy_api import client_of

POLICY = Policy.from_dict(
    {
        "rules": [
            {"ask": "pay", "approvals": {"count": 2, "distinct": True}},
            {"ask": "restart", "approvers": ["ops"]},
        ]
    }
)
TOKENS = {
    "olga": Principal(name="olga", roles=frozenset({"ops"})),
    "bob": Principal(name="bob", roles=frozenset({"ops"})),
    "carol": Principal(name="carol", roles=frozenset({"ops"})),
}


def client(
    service: Service, token: str
) -> contextlib.AbstractAsyncContextManager[httpx.AsyncClient]:
    return client_of(service, token, TOKENS)


async def held(service: Service, tool: str, **args: Any) -> str:
    context = CheckContext(thread_id="t", requested_by="agent-owner", origin="langgraph")
    [outcome] = await service.gate.check([ToolCall(id=tool, name=tool, args=args)], context)
    assert outcome.approval is not None
    return outcome.approval.id


async def test_an_approval_sent_on_the_arguments_before_an_edit_is_refused_naming_the_edit(
    store: SQLStore,
):
    service = Service(store=store, gate=Gate(POLICY, store), agents=[])
    approval_id = await held(service, "pay", amount=100, to="bob")
    async with client(service, "bob") as bob, client(service, "olga") as olga:
        seen = (await bob.get(f"/v1/approvals/{approval_id}")).json()
        assert seen["version"] == 1
        edit = {"kind": "edit", "args": {"amount": 999999, "to": "mallory"}, "version": 1}
        edited = await olga.post(f"/v1/approvals/{approval_id}/decision", json=edit)
        assert edited.status_code == 200, edited.text
        assert edited.json()["status"] == "pending" and edited.json()["version"] == 2
        length = await store.audit_length()

        stale = await bob.post(
            f"/v1/approvals/{approval_id}/decision", json={"kind": "approve", "version": 1}
        )
        assert stale.status_code == 409, stale.text
        body = stale.json()
        assert body["error"] == "StaleDecisionError"
        assert "edited by olga" in body["detail"]
        assert "amount 100 → 999999" in body["detail"] and "to 'bob' → 'mallory'" in body["detail"]
        assert (body["seen"], body["version"]) == (1, 2)
        [change] = body["changes"]
        assert (change["kind"], change["by"], change["version"]) == ("edit", "olga", 2)
        assert {tuple(e["path"]): (e["before"], e["after"]) for e in change["edits"]} == {
            ("amount",): (100, 999999),
            ("to",): ("bob", "mallory"),
        }
        # Nothing written: still pending on olga's one vote, and the audit log as it was.
        now = (await bob.get(f"/v1/approvals/{approval_id}")).json()
        assert (now["status"], [v["by"] for v in now["votes"]]) == ("pending", ["olga"])
        assert await store.audit_length() == length

        # Without a version the edited call is not approved either: say what you saw.
        bare = await bob.post(f"/v1/approvals/{approval_id}/decision", json={"kind": "approve"})
        assert bare.status_code == 409 and "must say which version" in bare.json()["detail"]

        # On the version that shows the edit, it completes the two approvals.
        done = await bob.post(
            f"/v1/approvals/{approval_id}/decision", json={"kind": "approve", "version": 2}
        )
        assert done.status_code == 200, done.text
        assert (done.json()["status"], done.json()["args"]) == (
            "edited",
            {"amount": 999999, "to": "mallory"},
        )
        assert done.json()["requested_args"] == {"amount": 100, "to": "bob"}


async def test_if_match_carries_the_etag_and_a_vote_makes_the_next_view_stale(store: SQLStore):
    service = Service(store=store, gate=Gate(POLICY, store), agents=[])
    approval_id = await held(service, "pay", amount=5)
    async with client(service, "bob") as bob, client(service, "carol") as carol:
        page = await bob.get(f"/v1/approvals/{approval_id}")
        assert page.headers["ETag"] == '"1"'
        first = await bob.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"kind": "approve"},
            headers={"If-Match": page.headers["ETag"]},
        )
        assert first.status_code == 200 and first.json()["version"] == 2
        # carol's view was made before bob's vote: she is told of it, and decides again.
        stale = await carol.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"kind": "reject", "reason": "no"},
            headers={"If-Match": '"1"'},
        )
        assert stale.status_code == 409 and "approved by bob" in stale.json()["detail"]
        mismatch = await carol.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"kind": "approve", "version": 2},
            headers={"If-Match": '"1"'},
        )
        assert mismatch.status_code == 422 and "If-Match" in mismatch.json()["detail"]
        for bad in (b'"x"', b'"0"', b"9" * 5000, '"²"'.encode("latin-1")):
            refused = await carol.post(
                f"/v1/approvals/{approval_id}/decision",
                json={"kind": "approve"},
                headers={b"If-Match": bad},
            )
            assert refused.status_code in (400, 422), (bad, refused.text)
        done = await carol.post(
            f"/v1/approvals/{approval_id}/decision",
            json={"kind": "approve"},
            headers={"If-Match": '"2"'},
        )
        assert done.json()["status"] == "approved"


async def test_a_single_approver_decides_on_what_was_handed_on_or_without_a_version(
    store: SQLStore,
):
    service = Service(store=store, gate=Gate(POLICY, store), agents=[])
    approval_id = await held(service, "restart", name="web")
    async with client(service, "olga") as olga, client(service, "bob") as bob:
        assign = {"to": "olga", "note": "yours"}
        assert (await bob.post(f"/v1/approvals/{approval_id}/assign", json=assign)).is_success
        # Handed on since version 1: a decision made on version 1 did not see it.
        stale = await olga.post(
            f"/v1/approvals/{approval_id}/decision", json={"kind": "approve", "version": 1}
        )
        assert stale.status_code == 409 and "assigned to olga by bob" in stale.json()["detail"]
        # Their own changes leave a view as it was: bob's view of version 1 is not stale.
        done = await bob.post(
            f"/v1/approvals/{approval_id}/decision", json={"kind": "approve", "version": 1}
        )
        assert (done.json()["status"], done.json()["decided_by"]) == ("approved", "bob")
        done = await olga.post(f"/v1/approvals/{approval_id}/decision", json={"kind": "approve"})
        assert done.json()["status"] == "approved"
        # The same decision sent again is answered as the first was.
        again = await olga.post(f"/v1/approvals/{approval_id}/decision", json={"kind": "approve"})
        assert again.status_code == 200 and again.json()["status"] == "approved"


async def test_a_refused_decision_names_no_redacted_value(store: SQLStore):
    service = Service(
        store=store, gate=Gate(POLICY, store), agents=[], redaction=Redaction(["password"])
    )
    approval_id = await held(service, "pay", amount=1, password="hunter2")
    async with client(service, "bob") as bob, client(service, "olga") as olga:
        edit = {"kind": "edit", "args": {"amount": 2, "password": "swordfish"}, "version": 1}
        assert (await olga.post(f"/v1/approvals/{approval_id}/decision", json=edit)).is_success
        shown = (await bob.get(f"/v1/approvals/{approval_id}")).json()
        stale = await bob.post(
            f"/v1/approvals/{approval_id}/decision", json={"kind": "approve", "version": 1}
        )
    assert stale.status_code == 409
    for text in (stale.text, str(shown)):
        assert "hunter2" not in text and "swordfish" not in text
    assert f"password '{MASK}' → '{MASK}'" in stale.json()["detail"]
    [change] = stale.json()["changes"]
    assert {e["path"][0]: e["after"] for e in change["edits"]} == {"amount": 2, "password": MASK}
    [change] = shown["changes"]
    assert {e["path"][0]: e["before"] for e in change["edits"]} == {"amount": 1, "password": MASK}


async def test_a_batch_names_each_version_and_a_stale_one_decides_none(store: SQLStore):
    service = Service(store=store, gate=Gate(POLICY, store), agents=[])
    first = await held(service, "restart", name="a")
    second = await held(service, "restart", name="b")
    async with client(service, "olga") as olga, client(service, "bob") as bob:
        await bob.post(f"/v1/approvals/{second}/assign", json={"to": "carol"})
        body = {
            "decisions": {
                first: {"kind": "approve", "version": 1},
                second: {"kind": "approve", "version": 1},
            }
        }
        refused = await olga.post("/v1/approvals/decisions", json=body)
        assert refused.status_code == 409
        assert (await olga.get(f"/v1/approvals/{first}")).json()["status"] == "pending"
        body["decisions"][second]["version"] = 2
        done = await olga.post("/v1/approvals/decisions", json=body)
        assert [a["status"] for a in done.json()["items"]] == ["approved", "approved"]


async def test_waiting_on_a_version_answers_once_it_changes(store: SQLStore):
    service = Service(store=store, gate=Gate(POLICY, store), agents=[])
    approval_id = await held(service, "pay", amount=3)
    async with client(service, "bob") as bob, client(service, "olga") as olga:
        import asyncio

        waiting = asyncio.create_task(bob.get(f"/v1/approvals/{approval_id}?wait=60&version=1"))
        voted = await olga.post(
            f"/v1/approvals/{approval_id}/decision", json={"kind": "approve", "version": 1}
        )
        assert voted.is_success
        shown = (await waiting).json()
    assert (shown["status"], shown["version"]) == ("pending", 2)
    assert [c["kind"] for c in shown["changes"]] == ["vote"]


async def test_what_an_edit_changed_inside_a_redacted_object_is_masked(store: SQLStore):
    service = Service(
        store=store, gate=Gate(POLICY, store), agents=[], redaction=Redaction(["headers"])
    )
    approval_id = await held(service, "pay", amount=1, headers={"authorization": "Bearer OLD-1"})
    async with client(service, "bob") as bob, client(service, "olga") as olga:
        edit = {"kind": "edit", "args": {"amount": 1, "headers": {"authorization": "Bearer NEW-2"}},
                "version": 1}  # fmt: skip
        assert (await olga.post(f"/v1/approvals/{approval_id}/decision", json=edit)).is_success
        shown = await bob.get(f"/v1/approvals/{approval_id}")
        listed = await bob.get("/v1/approvals", params={"status": "pending"})
        stale = await bob.post(
            f"/v1/approvals/{approval_id}/decision", json={"kind": "approve", "version": 1}
        )
    assert stale.status_code == 409
    for text in (shown.text, listed.text, stale.text):
        assert "OLD-1" not in text and "NEW-2" not in text
    assert f"headers.authorization '{MASK}' → '{MASK}'" in stale.json()["detail"]


async def test_an_edit_of_many_arguments_keeps_a_few_and_counts_the_rest(store: SQLStore):
    service = Service(store=store, gate=Gate(POLICY, store), agents=[])
    approval_id = await held(service, "pay", amount=1, items=list(range(500)))
    async with client(service, "olga") as olga:
        edits, version = 0, 1
        for round_ in range(12):  # one person editing again and again
            edit = {"kind": "edit", "args": {"amount": 1, "items": [round_] * 500},
                    "version": version}  # fmt: skip
            answer = await olga.post(f"/v1/approvals/{approval_id}/decision", json=edit)
            assert answer.status_code == 200, answer.text
            edits, version = edits + 1, answer.json()["version"]
        shown = (await olga.get(f"/v1/approvals/{approval_id}")).json()
        listed = (await olga.get("/v1/approvals", params={"status": "pending"})).json()
    assert len(shown["changes"]) == edits
    # Each changed (nearly) every item: 20 kept, the rest counted.
    assert all(len(c["edits"]) == 20 and c["more_edits"] >= 479 for c in shown["changes"])
    [item] = listed["items"]
    assert len(item["changes"]) == 10 and item["truncated"]
    assert [c["version"] for c in item["changes"]] == [c["version"] for c in shown["changes"]][-10:]


async def test_a_version_is_a_whole_number_and_nothing_else(store: SQLStore):
    service = Service(store=store, gate=Gate(POLICY, store), agents=[])
    approval_id = await held(service, "restart", name="web")
    async with client(service, "olga") as olga:
        for bad in (True, "1", 1.5, 0, 2**31 + 1, [1]):
            answer = await olga.post(
                f"/v1/approvals/{approval_id}/decision", json={"kind": "approve", "version": bad}
            )
            assert answer.status_code == 422, (bad, answer.text)
            assert "version" in answer.json()["detail"]
        assert (await olga.get(f"/v1/approvals/{approval_id}")).json()["status"] == "pending"
