"""One person, one name: which names are one person's, and which names no one may have."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from signoff import Policy, Reject, ToolCall
from signoff.gate import CheckContext, Gate
from signoff.gate.deciders import needed
from signoff.names import MAX_NAME, assignee_key, name_key, name_refusal, same_person
from signoff.store import SQLStore
from signoff.types import Quorum, Vote


@pytest.mark.parametrize(
    "other",
    [
        "mallory",
        "MALLORY",
        "\uff2d\uff41\uff4c\uff4c\uff4f\uff52\uff59",  # full-width letters
    ],
)
def test_names_that_differ_in_case_or_compatibility_form_are_one_person(other: str):
    assert same_person("Mallory", other)
    assert name_key(other) == "mallory"


def test_case_folding_is_unicode_s_not_just_lower_case():
    assert same_person("straße", "STRASSE")
    assert same_person("ǅ", "dž")  # a title-case digraph and its compatibility letters
    assert not same_person("mallory", "mallorie")


def test_an_unknown_name_is_nobody_s():
    assert not same_person(None, None)
    assert not same_person("mallory", None)
    assert not same_person(None, "mallory")


def test_votes_kept_under_two_spellings_of_one_name_are_one_person_s_vote():
    at = datetime(2026, 3, 1, tzinfo=UTC)
    votes = [Vote(by="Mallory", roles=(), at=at), Vote(by="mallory", roles=(), at=at)]
    assert needed(Quorum(count=2), votes).people == 1


def test_an_assignment_to_a_role_is_found_by_the_role_as_written():
    assert assignee_key("MALLORY") == "mallory"
    assert assignee_key("role:Ops") == "role:Ops"  # roles are the config's words, exactly


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "the name is empty"),
        ("machine ", "'machine ' has white space around it"),
        ("\tmachine", "has white space around it"),
        ("machine\u00a0", "has white space around it"),  # a no-break space is a space
        ("mal\nlory", "has a control character (U+000A)"),
        ("mal\x00lory", "has a control character (U+0000)"),
        ("mal\u200blory", "has an invisible formatting character (U+200B ZERO WIDTH SPACE)"),
        ("mal\u200dlory", "(U+200D ZERO WIDTH JOINER)"),
        ("mal\u202elory", "(U+202E RIGHT-TO-LEFT OVERRIDE)"),
        ("mal\ufefflory", "(U+FEFF ZERO WIDTH NO-BREAK SPACE)"),
        ("mal\u00adlory", "(U+00AD SOFT HYPHEN)"),
        ("mal\u2028lory", "has a line separator (U+2028 LINE SEPARATOR)"),
        ("mal\u2029lory", "has a paragraph separator (U+2029 PARAGRAPH SEPARATOR)"),
        ("mal\u3164lory", "has an invisible character (U+3164 HANGUL FILLER)"),
        ("mal\ufe0flory", "has an invisible character (U+FE0F VARIATION SELECTOR-16)"),
        ("mal\u034flory", "(U+034F COMBINING GRAPHEME JOINER)"),
        ("mal\ue000lory", "has a private-use character (U+E000)"),
        ("x" * (MAX_NAME + 1), f"is longer than {MAX_NAME} characters"),
        ("role:ops", "'role:ops' reads as an assignment to a role (role:NAME)"),
        ("ROLE:ops", "reads as an assignment to a role"),
    ],
)
def test_a_name_that_could_pass_for_another_is_refused_naming_what_is_wrong(
    name: str, problem: str
):
    said = name_refusal(name)
    assert said is not None and problem in said, said


@pytest.mark.parametrize(
    "name",
    ["ada", "Ada Lovelace", "ada@example.com", "Łukasz", "山田太郎", "o'brien", "x" * MAX_NAME],
)
def test_a_plain_name_is_accepted(name: str):
    assert name_refusal(name) is None


async def test_a_change_made_under_another_spelling_is_one_s_own_for_a_decision_on_an_older_version(
    store: SQLStore,
):
    gate = Gate(Policy.from_dict({"rules": [{"ask": "restart"}]}), store)
    context = CheckContext(run_id="r1", thread_id="t1", requested_by="bob")
    [outcome] = await gate.check([ToolCall(id="c1", name="restart")], context)
    assert outcome.approval is not None
    seen = outcome.approval.version
    await gate.assign(outcome.approval.id, "ada", actor="Mallory")
    decided = await gate.decide(
        outcome.approval.id, Reject(reason="not now"), actor="mallory", version=seen
    )
    assert (decided.status, decided.decided_by) == ("rejected", "mallory")
