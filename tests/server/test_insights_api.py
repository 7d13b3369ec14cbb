"""``GET /v1/insights``: the figures and suggestions of a window, read by anyone signed in; a
suggestion applied by an admin through ``PUT /v1/policy`` like any other policy change."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from signoff import Policy, PolicyEngine, ToolCall
from signoff.insights import candidates
from signoff.redaction import Redaction
from signoff.store import SQLStore
from tests.history import POLICY, write_history, write_rows
from tests.insights import histories
from tests.server.test_policy_api import client_of, make_service


@pytest.fixture
async def history(store: SQLStore) -> SQLStore:
    await write_history(store, 400, now=datetime.now(UTC), days=20, grant_uses=5)
    return store


async def test_anyone_signed_in_reads_the_insights_and_only_an_admin_may_apply(history: SQLStore):
    service = make_service(history, POLICY)
    async with client_of(service, "ops-token") as ops:
        seen = await ops.get("/v1/insights", params={"days": 30})
    async with client_of(service, "admin-token") as admin:
        answer = (await admin.get("/v1/insights")).json()

    assert seen.status_code == 200
    assert (seen.json()["can_apply"], answer["can_apply"]) == (False, True)
    assert answer["days"] == 30
    groups = {g["tool"]: g for g in answer["groups"]}
    assert groups["read_file"]["grant_uses"] == 5
    mail = groups["send_email"]
    assert mail["asked"] == sum(mail[s] for s in ("pending", "approved", "edited", "responded",
                                                  "rejected", "expired", "cancelled"))  # fmt: skip
    assert mail["median_seconds"] <= mail["p90_seconds"]
    assert mail["deciders"][0]["name"] == "alice"
    assert sorted(s["kind"] for s in answer["suggestions"]) == ["allow", "deny", "limit"]


async def test_applying_a_suggestion_is_a_new_audited_policy_version(history: SQLStore):
    service = make_service(history, POLICY)
    async with client_of(service, "admin-token") as admin:
        answer = (await admin.get("/v1/insights")).json()
        deny, allow = (next(s for s in answer["suggestions"] if s["kind"] == kind)
                       for kind in ("deny", "allow"))  # fmt: skip
        made_from = answer["policy_version"]
        async with client_of(service, "ops-token") as ops:
            refused = await ops.put(
                "/v1/policy", json={"document": deny["document"], "version": made_from}
            )
        applied = await admin.put(
            "/v1/policy", json={"document": deny["document"], "version": made_from}
        )
        stale = await admin.put(
            "/v1/policy", json={"document": allow["document"], "version": made_from}
        )
        after = (await admin.get("/v1/insights")).json()
        log = (await admin.get("/v1/audit", params={"limit": 1000})).json()["items"]

    assert refused.status_code == 403
    assert applied.status_code == 200
    assert stale.status_code == 409  # made from the version the deny replaced: nothing changes
    assert applied.json()["version"] != answer["policy_version"]
    assert after["policy_version"] == applied.json()["version"]
    assert sorted(s["kind"] for s in after["suggestions"]) == ["allow", "limit"]
    [entry] = [e for e in log if e["action"] == "policy" and e["actor"] == "ada"]
    assert entry["subject"] == applied.json()["version"]


@pytest.mark.parametrize("days", ["0", "-1", "3651", "soon", "1.5", ""])
async def test_a_window_out_of_bounds_or_not_a_number_is_refused_naming_days(
    store: SQLStore, days: str
):
    async with client_of(make_service(store, POLICY), "ops-token") as ops:
        answer = await ops.get("/v1/insights", params={"days": days})

    assert answer.status_code == 422
    assert answer.json()["problems"][0]["field"] == "query.days"


async def test_a_policy_given_in_code_has_figures_but_no_suggestions(history: SQLStore):
    service = make_service(history, POLICY)
    service.policy_document = None
    async with client_of(service, "admin-token") as admin:
        answer = (await admin.get("/v1/insights")).json()

    assert answer["groups"]
    assert (answer["suggestions"], answer["can_apply"]) == ([], False)


async def test_a_suggestion_that_would_show_a_redacted_argument_is_left_out(history: SQLStore):
    service = make_service(history, POLICY)
    service.redaction = Redaction(patterns=("to",))
    async with client_of(service, "admin-token") as admin:
        answer = (await admin.get("/v1/insights")).json()

    assert sorted(s["kind"] for s in answer["suggestions"]) == ["deny", "limit"]
    assert "example.com" not in json.dumps(answer)


async def test_a_suggestion_states_its_evidence_and_lets_through_nothing_people_refused(
    store: SQLStore,
):
    await write_rows(store, histories.tmp_files_and_a_traversal(datetime.now(UTC)))
    async with client_of(make_service(store, POLICY), "admin-token") as admin:
        [allow] = (await admin.get("/v1/insights")).json()["suggestions"]

    engine = PolicyEngine(Policy.from_dict(allow["document"]))
    shadow = ToolCall(id="c", name="delete_file", agent="ops", args={"path": histories.SHADOW})
    assert engine.evaluate(shadow).kind == "ask"
    assert allow["rule"]["when"] == {"path": {"regex": r"\A/tmp/(?!\.\.?\Z)[A-Za-z0-9._+-]+\Z"}}
    evidence = {key: allow[key] for key in ("matched", "total", "people", "requesters")}
    assert evidence == {"matched": 50, "total": 50, "people": 3, "requesters": 3}
    assert (allow["refused"], allow["let_through"]) == (1, 0)


async def test_a_flood_of_approvals_from_one_approver_suggests_nothing(store: SQLStore):
    await write_rows(store, histories.one_approver(datetime.now(UTC)))
    async with client_of(make_service(store, POLICY), "admin-token") as admin:
        answer = (await admin.get("/v1/insights")).json()

    assert answer["groups"][0]["approved"] == 50
    assert answer["suggestions"] == []


async def test_with_no_suggestion_the_nearest_candidates_say_how_far_each_bar_is(store: SQLStore):
    await write_rows(store, histories.mail_nearly_always_approved(datetime.now(UTC)))
    async with client_of(make_service(store, POLICY), "ops-token") as ops:
        answer = (await ops.get("/v1/insights")).json()

    assert answer["suggestions"] == []
    allow, deny = answer["nearest"]
    assert allow == {
        "kind": "allow",
        "rule": "tools.send_email",
        "tool": "send_email",
        "agent": "mailer",
        "text": "allow `send_email` (agent `mailer`) with `to` like `<name>@example.com`: 95.7% "
        "approved unchanged, needs 98%; 22 approvals, needs 20; 3 people deciding, needs 2; "
        "3 principals requesting, needs 2",
        "needs": [
            {"what": "approved unchanged", "have": 22 / 23, "need": 0.98, "met": False},
            {"what": "approvals", "have": 22, "need": 20, "met": True},
            {"what": "people deciding", "have": 3, "need": 2, "met": True},
            {"what": "principals requesting", "have": 3, "need": 2, "met": True},
        ],
        "dropped": None,
    }
    assert (deny["kind"], deny["tool"], deny["dropped"]) == ("deny", "send_email", None)


async def test_a_candidate_dropped_for_allowing_a_call_a_person_edited_says_so(store: SQLStore):
    await write_rows(store, histories.edited_into_the_folder(datetime.now(UTC)))
    async with client_of(make_service(store, POLICY), "ops-token") as ops:
        answer = (await ops.get("/v1/insights")).json()

    assert answer["suggestions"] == []
    dropped = answer["nearest"][0]
    assert (dropped["kind"], dropped["tool"]) == ("allow", "delete_file")
    assert all(need["met"] for need in dropped["needs"])
    assert dropped["dropped"] == (
        "it would have allowed 1 of the 1 call like these that people refused (rejected, edited "
        "or answered with text)"
    )


async def test_a_candidate_that_would_show_a_redacted_argument_is_left_out(
    store: SQLStore, monkeypatch: pytest.MonkeyPatch
):
    """And takes no place of one that may be shown: the nearest are chosen among those, so
    with room for one, the redacted allow (nearer) leaves it to the deny."""
    monkeypatch.setattr(candidates, "NEAREST", 1)
    await write_rows(store, histories.mail_nearly_always_approved(datetime.now(UTC)))
    service = make_service(store, POLICY)
    service.redaction = Redaction(patterns=("to",))
    async with client_of(service, "ops-token") as ops:
        answer = (await ops.get("/v1/insights")).json()

    assert [c["kind"] for c in answer["nearest"]] == ["deny"]
    assert "example.com" not in json.dumps(answer)
