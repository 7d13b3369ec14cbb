"""Argument conditions: paths into the arguments and the tests on what is found there."""

from __future__ import annotations

from typing import Any

import pytest

from signoff.policy.conditions import compile_condition, parse_path

ARGS = {
    "path": "/etc/hosts",
    "replicas": 12,
    "ratio": 0.5,
    "dry_run": False,
    "tags": ["prod", "eu"],
    "options": {"mode": "fast", "a/b": 1, "t~x": 2},
    "name": "nginx-123",
}


@pytest.mark.parametrize(
    ("path", "operator", "operand", "expected"),
    [
        ("path", "eq", "/etc/hosts", True),
        ("path", "eq", "/etc", False),
        ("path", "ne", "/etc", True),
        ("missing", "ne", "x", True),
        ("missing", "eq", None, False),
        ("replicas", "eq", 12.0, True),
        ("dry_run", "eq", 0, False),  # false is not the number 0
        ("dry_run", "eq", False, True),
        ("replicas", "in", [1, 12], True),
        ("replicas", "in", [True], False),
        ("options.mode", "in", ["slow"], False),
        ("options.mode", "not_in", ["slow"], True),
        ("missing", "not_in", ["slow"], True),
        ("path", "glob", "/etc/*", True),
        ("path", "glob", "/var/*", False),
        ("replicas", "glob", "1*", False),  # not a string
        ("name", "regex", r"^nginx-\d+$", True),
        ("name", "regex", "x-1", True),  # search, not a full match
        ("name", "regex", "^x", False),
        ("replicas", "gt", 10, True),
        ("replicas", "gt", 12, False),
        ("replicas", "ge", 12, True),
        ("ratio", "lt", 1, True),
        ("ratio", "le", 0.4, False),
        ("path", "gt", 5, False),  # a string is not compared with a number
        ("path", "gt", "/a", True),  # strings compare with strings
        ("dry_run", "lt", 1, False),  # booleans are not numbers
        ("missing", "gt", 0, False),
        ("path", "exists", True, True),
        ("missing", "exists", True, False),
        ("missing", "exists", False, True),
        ("tags.0", "eq", "prod", True),
        ("tags.5", "exists", False, True),
        ("tags.x", "exists", True, False),
        ("/options/mode", "eq", "fast", True),
        ("/options/a~1b", "eq", 1, True),
        ("/options/t~0x", "eq", 2, True),
        ("/tags/1", "eq", "eu", True),
        ("options", "eq", {"mode": "fast", "a/b": 1, "t~x": 2}, True),
        ("tags", "eq", ["prod", "eu"], True),
        ("tags", "eq", ["eu", "prod"], False),
    ],
)
def test_condition(path: str, operator: str, operand: Any, expected: bool):
    assert compile_condition(path, operator, operand).holds(ARGS) is expected


@pytest.mark.parametrize(
    ("operator", "operand", "message"),
    [
        ("in", "x", "'in' needs a list of values"),
        ("glob", "", "'glob' needs a non-empty string pattern"),
        ("glob", "a[", "invalid glob 'a['"),
        ("regex", "(", "invalid regex '('"),
        ("regex", 3, "'regex' needs a string"),
        ("gt", [1], "'gt' needs a number or a string"),
        ("gt", True, "'gt' needs a number or a string"),
        ("exists", "yes", "'exists' needs true or false"),
        ("near", 1, "unknown operator 'near'"),
    ],
)
def test_a_bad_operand_is_refused_with_a_reason(operator: str, operand: Any, message: str):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace("[", r"\[")):
        compile_condition("x", operator, operand)


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("a", ("a",)),
        ("a.b.0", ("a", "b", "0")),
        ("/a/b", ("a", "b")),
        ("/", ("",)),
        ("/a~1b~0", ("a/b~",)),
    ],
)
def test_paths_split_into_segments(path: str, segments: tuple[str, ...]):
    assert parse_path(path) == segments


@pytest.mark.parametrize("path", ["", "a.", ".a", "a..b", "/a~2"])
def test_malformed_paths_are_refused(path: str):
    with pytest.raises(ValueError, match=r"path|pointer"):
        parse_path(path)
