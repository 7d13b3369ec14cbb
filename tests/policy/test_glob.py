"""Glob checking and the shapes the index keys patterns by."""

from __future__ import annotations

import fnmatch

import pytest

from signoff.policy.glob import check_glob, compile_glob


@pytest.mark.parametrize(
    ("pattern", "shape", "key", "side"),
    [
        ("read_file", "exact", "read_file", "none"),
        ("a]b", "exact", "a]b", "none"),
        ("*", "any", "", "none"),
        ("***", "any", "", "none"),
        ("read_*", "prefix", "read_", "none"),
        ("read_**", "prefix", "read_", "none"),
        ("*_file", "suffix", "_file", "none"),
        ("*_delete*", "infix", "_delete", "none"),
        ("**x**", "infix", "x", "none"),
        ("read_?ile", "complex", "read_", "prefix"),
        ("a*b", "complex", "a", "prefix"),
        ("*[ab]cd", "complex", "cd", "suffix"),
        ("*[]]x]", "complex", "x]", "suffix"),
        ("*_op12[0-9]", "complex", "_op12", "infix"),
        ("svc[0-9]_op12", "complex", "_op12", "suffix"),
        ("svc_[0-9]_op", "complex", "svc_", "prefix"),
        ("*[ab]*", "complex", "", "none"),
        ("?", "complex", "", "none"),
        ("[!a]*", "complex", "", "none"),
    ],
)
def test_patterns_are_classified_by_their_literal_parts(
    pattern: str, shape: str, key: str, side: str
):
    glob = compile_glob(pattern)
    assert (glob.shape, glob.key, glob.key_side) == (shape, key, side)


@pytest.mark.parametrize(
    "pattern",
    [
        "read_file",
        "*",
        "read_*",
        "*_file",
        "*_del*",
        "r?ad_*",
        "*[ab]cd",
        "[!a]*",
        "*[]]x]",
        "ü*ß",
        "[*]",
        "*_d[e]l*",
        "x?d*",
    ],
)
@pytest.mark.parametrize(
    "name", ["read_file", "", "acd", "bcd", "xcd", "]x]", "üxß", "*", "a", "read_del_file", "ab"]
)
def test_a_compiled_glob_matches_exactly_like_fnmatchcase(pattern: str, name: str):
    assert compile_glob(pattern).matches(name) is fnmatch.fnmatchcase(name, pattern)


@pytest.mark.parametrize("pattern", ["[", "abc[", "a[!", "a[]", "x[!]"])
def test_an_unclosed_set_is_an_error(pattern: str):
    problem = check_glob(pattern)
    assert problem is not None and "is never closed" in problem


def test_an_empty_pattern_is_an_error():
    problem = check_glob("")
    assert problem is not None and problem.startswith("empty pattern")


@pytest.mark.parametrize("pattern", ["[]]", "[!]]", "[[]", "a]", "[a-z]*", "[!a-c]x", "*"])
def test_closed_sets_and_stray_brackets_are_valid(pattern: str):
    assert check_glob(pattern) is None
