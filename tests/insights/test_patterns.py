"""What approved values share, as conditions no wider than they are: one value, one address at
one domain, one name in one folder — judged by the policy as a rule's condition."""

from __future__ import annotations

import re

import pytest

from signoff import Policy, PolicyEngine, ToolCall
from signoff.insights.patterns import NAME, Pattern, shared
from signoff.store.insights import NAME_CHARACTERS


def calls(key: str, *values: str) -> list[ToolCall]:
    return [ToolCall(id=f"c{n}", name="t", args={key: v}) for n, v in enumerate(values)]


def allows(pattern: Pattern, value: str) -> bool:
    """Whether a policy allowing `t` under the pattern's condition allows `value`."""
    rule = {"allow": "t", "when": {pattern.key: pattern.condition}}
    engine = PolicyEngine(Policy.from_dict({"default": "ask", "rules": [rule]}))
    allowed = engine.evaluate(ToolCall(id="c", name="t", args={pattern.key: value})).kind
    assert (allowed == "allow") == pattern.holds(value), value
    return allowed == "allow"


def test_a_name_is_made_of_the_characters_the_database_tests():
    matched = {chr(c) for c in range(0x3000) if re.fullmatch(NAME, chr(c))}

    assert matched == set(NAME_CHARACTERS)


def test_one_value_shared_is_an_eq_condition():
    [pattern] = shared(calls("mode", "fast", "fast"))

    assert (pattern.test, pattern.condition, pattern.shown) == ("eq", {"eq": "fast"},
                                                                 "`mode` = `fast`")  # fmt: skip


def test_addresses_at_one_domain_allow_one_address_there_and_nothing_more():
    [pattern] = shared(calls("to", "ann@example.com", "bob.lee+x@example.com"))

    assert (pattern.test, pattern.value, pattern.near) == ("at_domain", "@example.com", "suffix")
    assert pattern.shown == "`to` like `<name>@example.com`"
    assert allows(pattern, "carol_1-2@example.com")
    for value in ("attacker@evil.test, boss@example.com", "a@b@example.com", "a;b@example.com",
                  "a b@example.com", "Boss <b@example.com>", "<b@example.com>", "@example.com",
                  "a@example.com\n", "a@example.com.evil.test", "a@EXAMPLE.com", "a@xexample.com",
                  "a%evil.test@example.com", "a\n@example.com"):  # fmt: skip
        assert not allows(pattern, value), value


def test_files_in_one_folder_allow_one_name_in_it_and_never_a_dot_or_a_separator():
    [pattern] = shared(calls("path", "/tmp/cache-1", "/tmp/cache-2.json"))

    assert (pattern.test, pattern.value, pattern.near) == ("in_folder", "/tmp/", "prefix")
    assert pattern.shown == "`path` like `/tmp/<name>`"
    assert allows(pattern, "/tmp/new")
    assert allows(pattern, "/tmp/...")  # a name of three dots, not a step up
    for value in ("/tmp/../etc/shadow", "/tmp/..", "/tmp/.", "/tmp/", "/tmp/a/b", "/tmp//a",
                  "/tmp/a\\..\\b", "/tmp/x\n", "/tmpx/a", "/var/tmp/a", "/tmp/a b"):  # fmt: skip
        assert not allows(pattern, value), value


def test_a_relative_folder_is_a_folder_too():
    [pattern] = shared(calls("path", "cache/a", "cache/b"))

    assert allows(pattern, "cache/c")
    assert not allows(pattern, "cache/../c")


@pytest.mark.parametrize(
    "values",
    [
        ("/a", "/b"),  # the root: every file of the machine's top folder
        ("/tmp/../etc/a", "/tmp/../etc/b"),  # a folder that steps up
        ("/tmp/./a", "/tmp/./b"),
        ("/tmp//a", "/tmp//b"),
        ("/tmp/a b", "/tmp/c"),  # a name with a space: not one name
        ("/tmp/a", "/tmp/.."),
        ("/tmp/a", "/var/b"),
        ("a@example.com", "b@example.org"),
        ("a, b@example.com", "c@example.com"),
        ("a@example.com", "b@example.com>"),
        ("a@[127.0.0.1]", "b@[127.0.0.1]"),
    ],
)
def test_values_that_share_no_plain_folder_or_domain_get_no_pattern(values: tuple[str, ...]):
    assert shared(calls("v", *values)) == []


def test_an_argument_that_is_not_a_string_in_every_call_gets_no_pattern():
    mixed = [*calls("v", "/tmp/a"), ToolCall(id="n", name="t", args={"v": 3})]

    assert shared(mixed) == []
