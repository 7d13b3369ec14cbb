"""Suggestions from a history of decisions: each one found, worded with its evidence, and true —
the policy with its rule applied gives the evidence calls the verdict it says."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from signoff import Policy, PolicyEngine, ToolCall
from signoff.insights import Suggestion, suggest, weigh
from signoff.insights.suggestions import REFUSED_LIMIT
from signoff.store import SQLStore
from tests.history import POLICY, write_history, write_rows
from tests.insights import histories

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


async def suggested(
    store: SQLStore, document: dict[str, Any] = POLICY, *, count: int = 400
) -> list[Suggestion]:
    await write_history(store, count, now=NOW)
    engine = PolicyEngine(Policy.from_dict(document))
    return await suggest(store, engine, document, days=30, now=NOW)


def verdict(document: dict[str, Any], name: str, agent: str | None, **args: object) -> str:
    engine = PolicyEngine(Policy.from_dict(document))
    return engine.evaluate(ToolCall(id="c", name=name, agent=agent, args=args)).kind


async def test_the_history_suggests_allowing_mail_to_one_domain_denying_deletes_and_a_bound(
    store: SQLStore,
):
    found = {s.kind: s for s in await suggested(store)}

    assert set(found) == {"allow", "deny", "limit"}
    allow, deny, limit = found["allow"], found["deny"], found["limit"]
    assert allow.text == (
        f"`send_email` (agent `mailer`) with `to` like `<name>@example.com` was approved "
        f"unchanged {allow.matched} of {allow.matched} times in 30 days, by 3 people, requested "
        "by 3 principals; people refused no call like these: allow it with that condition?"
    )
    assert allow.rule == {
        "id": "suggested-allow-send_email", "allow": "send_email", "agent": "mailer",
        "when": {"to": {"regex": r"\A[A-Za-z0-9._+-]+@example\.com\Z"}}, "priority": 1,
    }  # fmt: skip
    assert deny.rule == {"id": "suggested-deny-delete_file", "deny": "delete_file", "agent": "ops"}
    assert deny.text.startswith("`delete_file` (agent `ops`) was rejected 9")
    assert deny.text.endswith(
        f"({deny.matched} of {deny.total} decisions in 30 days, by 3 people, requested by 3 "
        "principals): deny it?"
    )
    assert limit.rule["when"] == {"amount": {"lt": 100}}
    assert limit.text.startswith(
        "edits of `charge` (agent `billing`) always lower `amount` under 100"
    )
    for suggestion in (allow, deny, limit):
        assert (suggestion.people, suggestion.requesters, suggestion.let_through) == (3, 3, 0)


async def test_each_suggested_policy_loads_and_judges_the_evidence_as_it_says(store: SQLStore):
    for suggestion in await suggested(store):
        engine = PolicyEngine(Policy.from_dict(suggestion.document))
        assert suggestion.checks
        for call, kind in suggestion.checks:
            assert engine.evaluate(call).kind == kind, (suggestion.kind, call)
        assert suggestion.document["rules"][-1] == suggestion.rule
        assert suggestion.document["rules"][:-1] == POLICY["rules"]


async def test_the_applied_rules_change_only_the_calls_they_name(store: SQLStore):
    found = {s.kind: s for s in await suggested(store)}

    mail = found["allow"].document
    assert verdict(mail, "send_email", "mailer", to="ann@example.com") == "allow"
    assert verdict(mail, "send_email", "mailer", to="ann@evil.test") == "ask"
    assert verdict(mail, "send_email", "other", to="ann@example.com") == "ask"
    deletes = found["deny"].document
    assert verdict(deletes, "delete_file", "ops", path="/x") == "deny"
    assert verdict(deletes, "delete_file", "other", path="/x") == "ask"
    charges = found["limit"].document
    assert verdict(charges, "charge", "billing", amount=99) == "allow"
    assert verdict(charges, "charge", "billing", amount=100) == "ask"


async def test_the_diff_adds_the_rule_to_the_policy_yaml(store: SQLStore):
    deny = next(s for s in await suggested(store) if s.kind == "deny")
    engine = PolicyEngine(Policy.from_dict(POLICY))

    added = [
        line
        for line in deny.diff.splitlines()
        if line.startswith("+") and line != "+++ policy suggested"
    ]
    assert deny.diff.startswith(f"--- policy {engine.version}\n+++ policy suggested\n")
    assert added == ["+- id: suggested-deny-delete_file", "+  deny: delete_file", "+  agent: ops"]


async def test_too_few_decisions_suggest_nothing(store: SQLStore):
    assert await suggested(store, count=40) == []


async def test_a_policy_that_already_denies_gets_no_deny_suggestion(store: SQLStore):
    document = {**POLICY, "rules": [*POLICY["rules"], {"deny": "delete_file"}]}

    kinds = [s.kind for s in await suggested(store, document)]

    assert sorted(kinds) == ["allow", "limit"]


async def test_no_allow_is_suggested_over_a_deny_beside_the_rule_that_asked(store: SQLStore):
    secret = {"deny": "send_email", "when": {"subject": {"eq": "secret"}}}
    document = {**POLICY, "rules": [*POLICY["rules"], secret]}

    kinds = sorted(s.kind for s in await suggested(store, document))

    assert kinds == ["deny", "limit"]  # allowing mail above the deny would let secrets out


async def test_an_allow_kept_back_by_a_deny_beside_its_rule_is_told_as_a_candidate(
    store: SQLStore,
):
    secret = {"deny": "send_email", "when": {"subject": {"eq": "secret"}}}
    document = {**POLICY, "rules": [*POLICY["rules"], secret]}
    await write_history(store, 400, now=NOW)

    weighed = await weigh(store, PolicyEngine(Policy.from_dict(document)), document, days=30,
                          now=NOW)  # fmt: skip

    [mail] = [c for c in weighed.nearest if (c.kind, c.tool) == ("allow", "send_email")]
    assert mail.dropped == "it would override a deny rule beside the rule that asked"
    assert sorted(s.kind for s in weighed.suggestions) == ["deny", "limit"]


async def test_a_suggested_rule_stays_within_what_the_asking_rule_matched(store: SQLStore):
    rules = [*POLICY["rules"]]
    rules[2] = {"ask": "charge", "when": {"customer": {"glob": "c*"}}}
    document = {**POLICY, "rules": rules}

    limit = next(s for s in await suggested(store, document) if s.kind == "limit")

    assert limit.rule["when"] == {"customer": {"glob": "c*"}, "amount": {"lt": 100}}
    assert verdict(limit.document, "charge", "billing", customer="c1", amount=5) == "allow"
    assert verdict(limit.document, "charge", "billing", customer="x1", amount=5) == "ask"


async def test_calls_the_default_asked_about_get_an_allow_at_priority_zero(store: SQLStore):
    document = {key: value for key, value in POLICY.items() if key != "tools"}

    allow = next(s for s in await suggested(store, document) if s.kind == "allow")

    assert "priority" not in allow.rule
    assert verdict(allow.document, "send_email", "mailer", to="a@example.com") == "allow"


async def suggested_from(store: SQLStore, rows: list[dict[str, Any]]) -> list[Suggestion]:
    await write_rows(store, rows)
    engine = PolicyEngine(Policy.from_dict(POLICY))
    return await suggest(store, engine, POLICY, days=30, now=NOW)


@pytest.mark.parametrize(("refusals", "offered"), [(REFUSED_LIMIT, 1), (REFUSED_LIMIT + 1, 0)])
async def test_a_suggestion_is_checked_against_at_most_a_thousand_refused_calls_like_it(
    store: SQLStore, refusals: int, offered: int
):
    rows = histories.tmp_files_and_refusals_deeper(NOW, refusals)

    allows = [s for s in await suggested_from(store, rows) if s.kind == "allow"]

    assert [(len(s.refused), s.let_through) for s in allows] == [(refusals, 0)] * offered


async def test_a_deny_needs_two_people_too(store: SQLStore):
    assert await suggested_from(store, histories.one_rejecter(NOW)) == []


async def test_what_signoff_decided_itself_is_no_ones_evidence(store: SQLStore):
    assert await suggested_from(store, histories.signoff_on_timeout(NOW)) == []
