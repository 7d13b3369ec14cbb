"""Precedence, defaults, grants and failing closed: what the compiled engine decides."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from signoff import Context, Grant, Policy, PolicyEngine, ToolCall
from signoff.errors import PolicyError
from signoff.policy.model import default_digest


def engine(data: dict[str, Any]) -> PolicyEngine:
    return PolicyEngine(Policy.from_dict(data))


def call(name: str, args: Any = None, **where: Any) -> ToolCall:
    return ToolCall(id="c", name=name, args={} if args is None else args, **where)


def decide(e: PolicyEngine, name: str, args: Any = None, **where: Any) -> tuple[str, str | None]:
    verdict = e.evaluate(call(name, args, **where))
    return verdict.kind, verdict.rule


def test_within_a_priority_deny_beats_ask_beats_allow_whatever_the_order():
    e = engine({"rules": [{"allow": "x*"}, {"ask": "xy*"}, {"deny": "xyz"}]})
    assert decide(e, "xyz") == ("deny", "rules[2]")
    assert decide(e, "xyw") == ("ask", "rules[1]")
    assert decide(e, "xa") == ("allow", "rules[0]")


def test_a_higher_priority_comes_first_even_over_a_deny():
    e = engine({"rules": [{"deny": "rm"}, {"allow": "rm", "priority": 5}]})
    assert decide(e, "rm") == ("allow", "rules[1]")


def test_among_equals_the_first_in_the_document_decides():
    e = engine({"rules": [{"ask": "a*", "id": "first"}, {"ask": "*b", "id": "second"}]})
    assert decide(e, "ab") == ("ask", "first")


def test_no_match_falls_to_the_default_which_asks_unless_set():
    assert decide(engine({}), "x") == ("ask", None)
    assert decide(engine({"default": "deny"}), "x") == ("deny", None)


def test_conditions_select_the_rule_and_a_failed_condition_lets_the_next_rule_decide():
    e = engine(
        {
            "default": "allow",
            "rules": [
                {"deny": "write_file", "when": {"path": {"glob": "/etc/shadow*"}}},
                {"ask": "write_file", "when": {"path": {"glob": "/etc/**"}}},
            ],
        }
    )
    assert decide(e, "write_file", {"path": "/etc/shadow"}) == ("deny", "rules[0]")
    assert decide(e, "write_file", {"path": "/etc/hosts"}) == ("ask", "rules[1]")
    assert decide(e, "write_file", {"path": "/home/a"}) == ("allow", None)
    assert decide(e, "write_file", {}) == ("allow", None)


def test_server_and_agent_globs_restrict_a_rule():
    e = engine(
        {
            "default": "allow",
            "rules": [
                {"ask": "*", "server": "prod-*"},
                {"deny": "shell", "agent": ["*/untrusted", "guest"]},
            ],
        }
    )
    assert decide(e, "query", server="prod-db") == ("ask", "rules[0]")
    assert decide(e, "query", server="staging") == ("allow", None)
    assert decide(e, "query") == ("allow", None)  # a call with no server is not on prod-*
    assert decide(e, "shell", agent="root/untrusted") == ("deny", "rules[1]")
    assert decide(e, "shell", agent="guest") == ("deny", "rules[1]")
    assert decide(e, "shell", agent="root") == ("allow", None)
    assert decide(e, "shell") == ("allow", None)


def test_except_leaves_the_named_tools_alone():
    e = engine({"default": "allow", "rules": [{"deny": "*", "except": ["read_*", "list"]}]})
    assert decide(e, "read_file")[0] == "allow"
    assert decide(e, "list")[0] == "allow"
    assert decide(e, "write_file")[0] == "deny"


def test_an_agent_section_beats_global_ask_and_allow_but_not_a_global_deny():
    e = engine(
        {
            "rules": [{"ask": "write_file"}, {"deny": "rm"}],
            "agents": {"a/b": {"rules": [{"allow": ["write_file", "rm"]}]}},
        }
    )
    assert decide(e, "write_file", agent="a/b") == ("allow", "agents.a/b.rules[0]")
    assert decide(e, "rm", agent="a/b") == ("deny", "rules[1]")
    assert decide(e, "write_file", agent="a") == ("ask", "rules[0]")


def test_section_defaults_prefer_the_agent_and_an_exact_path_over_a_glob():
    e = engine(
        {
            "default": "deny",
            "agents": {"team/*": {"default": "ask"}, "team/lead": {"default": "allow"}},
            "servers": {"fs": {"default": "ask"}},
        }
    )
    assert decide(e, "x", agent="team/lead") == ("allow", "agents.team/lead.default")
    assert decide(e, "x", agent="team/dev") == ("ask", "agents.team/*.default")
    assert decide(e, "x", agent="team/lead", server="fs") == ("allow", "agents.team/lead.default")
    assert decide(e, "x", server="fs") == ("ask", "servers.fs.default")
    assert decide(e, "x") == ("deny", None)


@pytest.mark.parametrize("args", ["{not json", ["a", "list"], None, 42])
def test_arguments_that_are_not_an_object_fail_closed(args: Any):
    e = engine({"default": "allow", "rules": [{"allow": "run"}]})
    verdict = e.evaluate(ToolCall(id="c", name="run", args=args))
    assert (verdict.kind, verdict.rule) == ("ask", None)
    assert "not a JSON object" in verdict.reason


def test_arguments_that_are_not_an_object_are_denied_where_a_deny_rule_might_apply():
    e = engine({"rules": [{"allow": "run"}, {"deny": "run", "when": {"cmd": {"regex": "rm"}}}]})
    verdict = e.evaluate(ToolCall(id="c", name="run", args="rm -rf /"))  # type: ignore[arg-type]
    assert (verdict.kind, verdict.rule) == ("deny", "rules[1]")
    assert e.explain(ToolCall(id="c", name="run", args="x")).verdict.kind == "deny"  # type: ignore[arg-type]
    strict = engine({"default": "deny"})
    assert strict.evaluate(ToolCall(id="c", name="x", args=[])).kind == "deny"  # type: ignore[arg-type]


def grant(
    scope: str, subject: str | None = None, *, under: PolicyEngine | None = None, **fields: Any
) -> Grant:
    """A grant by alice; `under` an engine, bound to its rule as that engine has it."""
    rule = fields.pop("rule", "rules[0]")
    digest = None
    if under is not None:
        digest = default_digest("ask") if rule is None else under.rule(rule).digest
    return Grant(
        id=f"g-{scope}",
        tool=fields.pop("tool", "send_email"),
        rule=rule,
        rule_digest=digest,
        scope=scope,  # type: ignore[arg-type]
        subject=subject,
        created_by="alice",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        **fields,
    )


def test_a_grant_turns_an_ask_into_an_allow_within_its_scope():
    e = engine({"rules": [{"ask": "send_email"}]})
    made = grant("thread", "t1", under=e, requested_by="olga")
    thread = Context(thread_id="t1", requested_by="olga", grants=(made,))
    verdict = e.evaluate(call("send_email"), thread)
    assert (verdict.kind, verdict.rule) == ("allow", "grant:g-thread")
    assert verdict.reason == "approved always by alice for this thread"
    assert e.evaluate(call("send_email"), replace(thread, thread_id="t2")).kind == "ask"
    assert e.evaluate(call("send_mail"), thread).kind == "ask"


def test_a_grant_never_overrides_a_deny_even_one_of_lower_priority():
    e = engine(
        {
            "rules": [
                {"ask": "send_email", "priority": 5},
                {"deny": "send_email", "when": {"to": {"glob": "*@competitor.com"}}},
            ]
        }
    )
    context = Context(grants=(grant("global", under=e),))
    assert e.evaluate(call("send_email", {"to": "a@us.com"}), context).kind == "allow"
    assert e.evaluate(call("send_email", {"to": "b@competitor.com"}), context).kind == "ask"
    denied = engine({"rules": [{"deny": "send_email"}]})
    assert denied.evaluate(call("send_email"), context).kind == "deny"


def test_a_grant_narrowed_to_the_arguments_covers_only_that_exact_call():
    approved = call("send_email", {"to": "a@us.com"})
    e = engine({})
    context = Context(grants=(grant("global", args_digest=approved.digest, rule=None, under=e),))
    assert e.evaluate(call("send_email", {"to": "a@us.com"}), context).kind == "allow"
    assert e.evaluate(call("send_email", {"to": "b@us.com"}), context).kind == "ask"


def test_grant_scopes_bind_to_their_subject():
    run = grant("run", "r1", requested_by="olga")
    assert run.covers(call("send_email"), Context(run_id="r1", requested_by="olga"))
    assert not run.covers(call("send_email"), Context(run_id="r2", requested_by="olga"))
    assert not run.covers(call("send_email"), Context(requested_by="olga"))
    agent = grant("agent", "a/b", agent="a/b")
    assert agent.covers(call("send_email", agent="a/b"), Context())
    assert not agent.covers(call("send_email", agent="a"), Context())
    assert not grant("global", server="fs").covers(call("send_email"), Context())
    assert grant("global", server="fs").covers(call("send_email", server="fs"), Context())


def test_explain_names_the_deciding_rule_and_the_rules_it_shadowed():
    e = engine(
        {
            "rules": [
                {"allow": "*_file", "id": "files"},
                {"ask": "write_*", "id": "writes"},
                {"deny": "write_file", "when": {"path": {"glob": "/etc/*"}}, "id": "etc"},
                {"deny": "rm", "id": "rm"},
            ]
        }
    )
    explanation = e.explain(call("write_file", {"path": "/etc/hosts"}))
    assert explanation.rule is not None
    assert explanation.rule.id == "etc"
    assert [r.id for r in explanation.shadowed] == ["writes", "files"]
    assert explanation.verdict == e.evaluate(call("write_file", {"path": "/etc/hosts"}))
    other = e.explain(call("write_file", {"path": "/tmp/x"}))
    assert (other.verdict.kind, [r.id for r in other.shadowed]) == ("ask", ["files"])
    nothing = e.explain(call("ls"))
    assert (nothing.rule, nothing.shadowed, nothing.verdict.kind) == (None, (), "ask")


def test_explain_shows_the_grant_that_let_a_call_through():
    e = engine({"rules": [{"ask": "send_email", "id": "mail"}]})
    context = Context(grants=(grant("global", rule="mail", under=e),))
    explanation = e.explain(call("send_email"), context)
    assert explanation.grant is not None and explanation.grant.id == "g-global"
    assert explanation.verdict.kind == "allow"
    assert [r.id for r in explanation.shadowed] == ["mail"]


def test_the_verdict_carries_the_rules_timeout_approvers_and_self_approval():
    e = engine(
        {
            "rules": [
                {
                    "ask": "pay",
                    "timeout": "10m",
                    "approvers": "finance",
                    "forbid_self_approval": True,
                }
            ]
        }
    )
    verdict = e.evaluate(call("pay"))
    assert (verdict.timeout, verdict.approvers, verdict.forbid_self_approval) == (
        600.0,
        ("finance",),
        True,
    )
    assert verdict.reason == "approval required: pay"
    assert e.rule("rules[0]").timeout == 600.0


def test_the_cache_is_bounded_and_gives_the_same_answers_after_it_is_cleared():
    e = PolicyEngine(Policy.from_dict({"rules": [{"deny": "tool_1*"}]}), cache_size=8)
    first = [e.evaluate(call(f"tool_{i}")).kind for i in range(40)]
    again = [e.evaluate(call(f"tool_{i}")).kind for i in range(40)]
    assert first == again
    assert first[1] == "deny" and first[2] == "ask" and first[10] == "deny"
    assert len(e._cache) <= 8


def test_exact_names_and_globs_among_a_thousand_rules_decide_by_precedence():
    rules = [{"allow": f"tool_{i}"} for i in range(1000)]
    rules += [{"deny": "*_admin"}, {"ask": "tool_9*"}, {"deny": "t?ol_[0-4]5"}]
    e = engine({"rules": rules})
    assert decide(e, "tool_500") == ("allow", "rules[500]")
    assert decide(e, "tool_999") == ("ask", "rules[1001]")
    assert decide(e, "tool_45") == ("deny", "rules[1002]")
    assert decide(e, "tool_admin") == ("deny", "rules[1000]")
    assert decide(e, "unknown") == ("ask", None)


def test_a_grant_never_covers_arguments_that_cannot_be_checked():
    e = engine(
        {
            "rules": [
                {"ask": "pay", "priority": 1},
                {"deny": "pay", "when": {"amount": {"gt": 1000}}},
            ]
        }
    )
    context = Context(grants=(grant("global", tool="pay", under=e),))
    assert e.evaluate(call("pay", {"amount": 5}), context).kind == "allow"
    assert e.evaluate(call("pay", {"amount": float("nan")}), context).kind == "ask"
    narrowed = Context(grants=(grant("global", tool="pay", args_digest="0" * 64, under=e),))
    assert e.evaluate(call("pay", {"amount": float("nan")}), narrowed).kind == "ask"


def test_a_grant_covers_only_calls_the_rule_it_was_left_under_asks_about():
    e = engine(
        {
            "rules": [
                {"ask": "delete_pod", "when": {"ns": "prod"}, "approvers": ["ops"], "id": "prod"},
                {"ask": "delete_pod", "approvers": ["dev"], "id": "any"},
            ]
        }
    )
    context = Context(
        grants=(grant("global", tool="delete_pod", rule="any", roles=("dev",), under=e),)
    )
    assert e.evaluate(call("delete_pod", {"ns": "dev"}), context).kind == "allow"
    held = e.evaluate(call("delete_pod", {"ns": "prod"}), context)
    assert (held.kind, held.rule, held.approvers) == ("ask", "prod", ("ops",))


def test_a_fixed_kind_is_one_no_arguments_can_change():
    e = engine(
        {
            "default": "ask",
            "servers": {
                "fs": {"exclude_tools": ["*delete*", "move_file"], "auto_approve_tools": ["read_*"]}
            },
            "rules": [
                {"deny": "write_file", "when": {"path": {"glob": "/secrets/*"}}},
                {"ask": "read_secret", "when": {"path": {"glob": "/secrets/*"}}, "timeout": "1m"},
                {"deny": "drop", "when": {"force": {"eq": True}}},
                {"deny": "drop"},
                {"allow": "peek", "when": {"n": {"lt": 3}}},
            ],
        }
    )
    kinds = {
        (name, server): e.fixed_kind(name, server=server)
        for name, server in [
            ("delete_file", "fs"), ("move_file", "fs"), ("move_file", "other"),
            ("read_text_file", "fs"), ("write_file", "fs"), ("read_secret", None),
            ("drop", None), ("peek", None),
        ]
    }  # fmt: skip
    assert kinds == {
        ("delete_file", "fs"): "deny",
        ("move_file", "fs"): "deny",
        ("move_file", "other"): "ask",  # the default
        ("read_text_file", "fs"): "allow",
        ("write_file", "fs"): None,  # denied for some paths only
        ("read_secret", None): "ask",  # asks either way (by a rule, or by the default)
        ("drop", None): "deny",  # denied either way
        ("peek", None): None,  # allowed for small n only
    }
    # A fixed kind is what evaluating the tool's calls gives, whatever the arguments.
    for (name, server), kind in kinds.items():
        where = {"server": server} if server else {}
        for args in ({}, {"path": "/secrets/a", "force": True, "n": 1}):
            if kind is not None:
                assert e.evaluate(call(name, args, **where)).kind == kind


# -- what a rule judges: tools, or the MCP gateway's resource reads and prompt gets -------------


def test_a_resource_rule_judges_reads_by_uri_and_never_a_tool_of_that_name():
    e = engine(
        {
            "default": "allow",
            "rules": [
                {"deny": {"resource": "file:///secrets/*"}},
                {"ask": {"prompt": ["review*"]}, "when": {"lang": {"eq": "py"}}},
                {"deny": ["*delete*"]},
            ],
        }
    )
    assert decide(e, "file:///secrets/a", kind="resource") == ("deny", "rules[0]")
    assert decide(e, "file:///secrets/a") == ("allow", None)  # a tool named so
    assert decide(e, "file:///notes", kind="resource") == ("allow", None)
    assert decide(e, "review_pr", {"lang": "py"}, kind="prompt") == ("ask", "rules[1]")
    assert decide(e, "review_pr", {"lang": "go"}, kind="prompt") == ("allow", None)
    assert decide(e, "review_pr", {"lang": "py"}) == ("allow", None)
    # A tool glob never catches a URI, however it reads.
    assert decide(e, "file:///tmp/a_delete_me", kind="resource") == ("allow", None)
    assert e.fixed_kind("file:///secrets/x", kind="resource") == "deny"
    assert e.fixed_kind("review_pr", kind="prompt") is None  # its arguments decide


def test_defaults_and_server_sections_judge_resources_and_prompts_too():
    e = engine({"default": "ask", "servers": {"fs": {"default": "deny"}}})
    assert decide(e, "file:///a", kind="resource") == ("ask", None)
    assert decide(e, "file:///a", server="fs", kind="resource")[0] == "deny"
    assert decide(e, "hello", server="fs", kind="prompt")[0] == "deny"


def test_a_grant_for_a_prompt_never_covers_a_tool_of_the_same_name():
    e = engine({"default": "ask"})
    prompt = grant("global", under=e, rule=None, tool="review", kind="prompt")
    context = Context(grants=(prompt,))
    assert e.evaluate(call("review", kind="prompt"), context).rule == "grant:g-global"
    assert e.evaluate(call("review"), context).kind == "ask"
    assert e.grant_problem(prompt, call("review"), context) == "it is for another tool"


def test_a_rule_names_one_kind_and_says_so_when_it_does_not():
    policy = Policy.from_dict({"rules": [{"deny": {"resource": ["file:///x/*"]}, "id": "r"}]})
    assert policy.rules[0].to_dict() == {"id": "r", "deny": {"resource": ["file:///x/*"]}}
    for bad, found in (
        ({"resources": "x"}, "found resources"),
        ({"tool": "a", "prompt": "b"}, "found tool, prompt"),
        ({}, "found nothing"),
    ):
        with pytest.raises(
            PolicyError, match=f"one of tool, resource, prompt or question \\({found}\\)"
        ):
            Policy.from_dict({"rules": [{"ask": bad}]})
    with pytest.raises(PolicyError, match=r"rules\[0\]\.ask\.resource\[0\]: invalid glob"):
        Policy.from_dict({"rules": [{"ask": {"resource": ["file:///[x"]}}]})


def test_a_rule_names_questions_by_the_ask_tool_and_judges_only_them():
    policy = Policy.from_dict({"rules": [{"ask": {"question": "ask_*"}, "approvers": ["ops"]}]})
    assert policy.rules[0].to_dict()["ask"] == {"question": ["ask_*"]}
    engine = PolicyEngine(policy)
    question = ToolCall(id="q", name="ask_person", kind="question", args={"question": "?"})
    assert engine.evaluate(question).approvers == ("ops",)
    assert engine.evaluate(replace(question, kind="tool")).rule is None


def test_a_tool_calls_digest_is_unchanged_and_a_resource_reads_differs():
    tool = ToolCall(id="1", name="x", args={"a": 1}, server="s")
    assert tool.digest == "bb1c7317396fed49b3036ea111b2dace0b372c0c06dd163ca65234dfa02d8b7d"
    assert ToolCall(id="1", name="x", args={"a": 1}, server="s", kind="resource").digest not in (
        tool.digest,
        ToolCall(id="1", name="x", args={"a": 1}, server="s", kind="prompt").digest,
    )
