"""The compiled engine decides exactly as a plain fnmatch loop over every rule would.

The reference sorts the rules by precedence and returns the first whose tool, except, server and
agent globs match by `fnmatch.fnmatchcase`: no index, no cache. Patterns and names are random and
include sets (`[...]`, `[!...]`, `[]...]`), `?`, runs of `*`, stray `]` and non-ASCII.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signoff import Policy, PolicyEngine, ToolCall
from signoff.policy.glob import check_glob
from signoff.policy.source import format_path

CI = bool(os.environ.get("CI"))
# The full run is CI's (CI=true there, with time to spare); `make test` on a developer's machine
# samples the same space lighter, to keep the whole suite within minutes.
EXAMPLES = 10_000 if CI else 150

_CHARS = "ab_é日"


def _close_sets(pattern: str) -> str:
    """Append `]` until every set is closed: the loader refuses unclosed ones."""
    while check_glob(pattern) is not None:
        pattern += "]"
    return pattern


# Sets with `!`, ranges, a leading `]`, stray `]` and `!`, `?` and runs of `*` all occur.
_literal_text = st.text(alphabet=_CHARS + "]!-", min_size=1, max_size=4)
# Each shape the index keys differently: exact, prefix, suffix, infix, any, and complex globs
# keyed by their literal prefix, by their literal suffix, or by nothing.
_SHAPES = [
    "{}",
    "{}*",
    "*{}",
    "*{}*",
    "**{}***",
    "*",
    "{}?*",
    "{}[!b]",
    "?{}",
    "*[a-é]{}",
    "?*[]!]",
]
_shaped = st.tuples(st.sampled_from(_SHAPES), _literal_text)
glob = st.one_of(
    st.text(alphabet=_CHARS + "]!-?*[", min_size=1, max_size=7).map(_close_sets),
    _shaped.map(lambda t: t[0].format(t[1])),
)
name = st.text(alphabet=_CHARS + "]![*?-", min_size=0, max_size=7)


@dataclass(frozen=True)
class Spec:
    id: str
    effect: str
    tools: list[str]
    excepts: list[str]
    server: str | None
    agent: str | None
    priority: int
    tier: int
    flag: bool | None

    def matches(
        self, tool: str, server: str | None, agent: str | None, args: dict[str, Any]
    ) -> bool:
        return (
            (self.flag is None or args.get("flag") is self.flag)
            and any(fnmatchcase(tool, p) for p in self.tools)
            and not any(fnmatchcase(tool, p) for p in self.excepts)
            and (self.server is None or (server is not None and fnmatchcase(server, self.server)))
            and (self.agent is None or (agent is not None and fnmatchcase(agent, self.agent)))
        )


rule = st.fixed_dictionaries(
    {
        "effect": st.sampled_from(["allow", "ask", "deny"]),
        "tools": st.lists(glob, min_size=1, max_size=3),
        "excepts": st.lists(glob, max_size=1),
        "server": st.none() | glob,
        "agent": st.none() | glob,
        "priority": st.sampled_from([0, 0, 0, 1, -1]),
        "flag": st.none() | st.booleans(),
    }
)


def build(
    top: list[dict[str, Any]],
    section: list[dict[str, Any]],
    section_agent: str,
    defaults: tuple[str, str | None],
) -> tuple[dict[str, Any], list[Spec]]:
    """The policy document and, in document order, what each of its rules is."""

    def as_rule(r: dict[str, Any], in_section: bool) -> dict[str, Any]:
        out: dict[str, Any] = {r["effect"]: r["tools"], "priority": r["priority"]}
        if r["excepts"]:
            out["except"] = r["excepts"]
        if r["server"] is not None:
            out["server"] = r["server"]
        if r["agent"] is not None and not in_section:
            out["agent"] = r["agent"]
        if r["flag"] is not None:
            out["when"] = {"flag": {"eq": r["flag"]}}
        return out

    specs = [
        Spec(
            f"rules[{i}]",
            r["effect"],
            r["tools"],
            r["excepts"],
            r["server"],
            r["agent"],
            r["priority"],
            0,
            r["flag"],
        )
        for i, r in enumerate(top)
    ]
    specs += [
        Spec(
            format_path(("agents", section_agent, "rules", i)),
            r["effect"],
            r["tools"],
            r["excepts"],
            r["server"],
            section_agent,
            r["priority"],
            1,
            r["flag"],
        )
        for i, r in enumerate(section)
    ]
    default, section_default = defaults
    document: dict[str, Any] = {"default": default, "rules": [as_rule(r, False) for r in top]}
    body: dict[str, Any] = {"rules": [as_rule(r, True) for r in section]}
    if section_default is not None:
        body["default"] = section_default
    document["agents"] = {section_agent: body}
    return document, specs


def reference(
    specs: list[Spec],
    defaults: tuple[str, str | None],
    section_agent: str,
    call: tuple[str, str | None, str | None, dict[str, Any]],
) -> tuple[str, str | None]:
    tool, server, agent, args = call
    rank = {"deny": 0, "ask": 1, "allow": 2}
    ordered = sorted(
        enumerate(specs),
        key=lambda item: (
            -item[1].priority,
            item[1].effect != "deny",
            -item[1].tier,
            rank[item[1].effect],
            item[0],
        ),
    )
    for _, spec in ordered:
        if spec.matches(tool, server, agent, args):
            return spec.effect, spec.id
    default, section_default = defaults
    if section_default is not None and agent is not None and fnmatchcase(agent, section_agent):
        return section_default, format_path(("agents", section_agent, "default"))
    return default, None


def _near(pattern: str, pre: str, post: str) -> str:
    """A name that the pattern matches (when it can), wrapped in random text."""
    out, i = "", 0
    while i < len(pattern):
        char = pattern[i]
        if char == "[":
            end = i + 1  # the scan of fnmatch: `[!` and a leading `]` belong to the set
            end += pattern[end] == "!"
            end += pattern[end] == "]"
            end = pattern.index("]", end)
            choices = [c for c in _CHARS + "]!-[*?" if fnmatchcase(c, pattern[i : end + 1])]
            out += choices[0] if choices else "a"
            i = end + 1
            continue
        out += "" if char == "*" else "a" if char == "?" else char
        i += 1
    return pre + out + post


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    top=st.lists(rule, max_size=8),
    section=st.lists(rule, max_size=3),
    section_agent=st.sampled_from(["a.b", "x/y", "x/*"]),
    defaults=st.tuples(
        st.sampled_from(["allow", "ask", "deny"]),
        st.none() | st.sampled_from(["allow", "ask", "deny"]),
    ),
    data=st.data(),
)
def test_the_compiled_engine_agrees_with_a_plain_fnmatch_loop(
    top: list[dict[str, Any]],
    section: list[dict[str, Any]],
    section_agent: str,
    defaults: tuple[str, str | None],
    data: st.DataObject,
):
    document, specs = build(top, section, section_agent, defaults)
    engine = PolicyEngine(Policy.from_dict(document))
    patterns = [p for spec in specs for p in [*spec.tools, *spec.excepts]] or ["a"]
    affix = st.just("") | name
    names = st.one_of(name, st.builds(_near, st.sampled_from(patterns), affix, affix))
    agents = st.none() | st.sampled_from(["a.b", "x/y", "x/z", "ab"]) | names
    for _ in range(8):
        tool, server, agent = data.draw(names), data.draw(st.none() | names), data.draw(agents)
        flag = data.draw(st.none() | st.booleans())
        args: dict[str, Any] = {} if flag is None else {"flag": flag}
        verdict = engine.evaluate(
            ToolCall(id="c", name=tool, server=server, agent=agent, args=args)
        )
        got = (verdict.kind, verdict.rule)
        assert got == reference(specs, defaults, section_agent, (tool, server, agent, args)), (
            tool, server, agent, args,
        )  # fmt: skip
