"""Inputs found by review that once slipped through: each is now refused, or works, on purpose."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from signoff import Policy, PolicyEngine, PolicyError, ToolCall


def load(text: str) -> Policy:
    return Policy.from_yaml(textwrap.dedent(text), source="p.yaml")


def problems(text: str) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        load(text)
    return [str(p) for p in caught.value.problems]


def kind(policy: Policy, name: str, args: object = None, **where: str) -> str:
    call = ToolCall(id="c", name=name, args={} if args is None else args, **where)  # type: ignore[arg-type]
    return PolicyEngine(policy).evaluate(call).kind


def test_a_duplicate_key_in_a_json_policy_is_an_error_not_a_silent_override(tmp_path: Path):
    path = tmp_path / "dup.json"
    path.write_text('{"rules": [{"deny": "rm"}],\n "rules": [{"allow": "*"}]}')
    with pytest.raises(
        PolicyError, match=rf"{path}:2:2: duplicate key 'rules' \(first defined on line 1\)"
    ):
        Policy.from_file(path)


@pytest.mark.parametrize(
    "args", [{"amount": math.nan}, {"amount": math.inf}, {"path": Path("/etc/passwd")}]
)
def test_arguments_holding_non_json_values_fail_closed_where_a_condition_reads_them(args: object):
    policy = Policy.from_dict(
        {
            "rules": [
                {"deny": "transfer", "when": {"amount": {"gt": 1000}}},
                {"deny": "transfer", "when": {"path": {"glob": "/etc/*"}}},
                {"allow": "transfer"},
            ]
        }
    )
    assert kind(policy, "transfer", args) == "deny"


def test_toggles_apply_to_tools_a_glob_in_the_tool_list_covers():
    policy = load("servers: {fs: {tools: ['fs_*'], tool_approvals: {fs_write: true}}}")
    assert policy.warnings == ()
    assert kind(policy, "fs_write", server="fs") == "ask"
    assert kind(policy, "fs_read", server="fs") == "allow"


def test_both_spellings_of_require_approval_in_one_section_is_an_error():
    [problem] = problems(
        """
        servers:
          fs:
            toolNames: [read, write]
            requireApproval: [write]
            require_approval: [read]
        """
    )
    assert "give either 'require_approval' or 'requireApproval'" in problem


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("rules: [{ask: x, timeout: .nan}]", "p.yaml:1:27: rules[0].timeout", "timeout must be"),
        ("rules: [{ask: x, timeout: .inf}]", "p.yaml:1:27: rules[0].timeout", "timeout must be"),
        (
            "rules: [{ask: x, when: {n: {lt: .nan}}}]",
            "p.yaml:1:33: rules[0].when.n.lt",
            "needs a JSON value",
        ),
        (
            "rules: [{ask: x, when: {day: 2024-01-01}}]",
            "p.yaml:1:30: rules[0].when.day",
            "needs a JSON value",
        ),
    ],
)
def test_values_that_are_not_json_are_refused_where_they_stand(text: str, where: str, message: str):
    [problem] = problems(text)
    assert problem.startswith(where)
    assert message in problem


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            "servers: {null: {default: deny}}",
            "p.yaml:1:11: servers[null]: keys must be strings, not null",
        ),
        ("agents: {1.5: {default: deny}}", "p.yaml:1:10: agents[1.5]: keys must be strings"),
        (
            "tools:\n  a: true\n  yes: true\n",
            "p.yaml:3:3: tools[true]: keys must be strings, not a boolean True",
        ),
    ],
)
def test_keys_that_are_not_strings_are_reported_at_the_key(text: str, where: str):
    [problem] = problems(text)
    assert problem.startswith(where)
    assert "quote it" in problem


def test_a_path_segment_of_non_ascii_digits_is_a_key_not_an_index():
    policy = Policy.from_dict(
        {"default": "allow", "rules": [{"deny": "x", "when": {"files.²": {"exists": True}}}]}
    )
    assert kind(policy, "x", {"files": ["a"]}) == "allow"
    assert kind(policy, "x", {"files": {"²": 1}}) == "deny"


def test_yaml_merge_keys_are_accepted():
    policy = load(
        """
        rules:
          - &strict {ask: deploy, approvers: [ops], timeout: 5m}
          - {<<: *strict, ask: rollback, id: rollback}
        """
    )
    rollback = PolicyEngine(policy).evaluate(ToolCall(id="c", name="rollback"))
    assert (rollback.rule, rollback.approvers, rollback.timeout) == ("rollback", ("ops",), 300.0)


def test_empty_lists_in_the_seed_formats_mean_nothing():
    policy = Policy.from_dict(
        {
            "servers": {
                "k": {"toolNames": [], "requireApproval": []},
                "d": {"tool_blacklist": [], "auto_approved_tools": ["*_list"]},
            }
        }
    )
    assert kind(policy, "anything", server="k") == "ask"
    assert kind(policy, "pods_list", server="d") == "allow"
    assert kind(policy, "pods_delete", server="d") == "ask"


def test_ties_follow_the_order_of_the_file_across_keys():
    policy = load(
        """
        tools:
          pay: {require_approval: true, approvers: [finance], timeout: 5m}
        rules:
          - {ask: "*", approvers: [anyone]}
        """
    )
    verdict = PolicyEngine(policy).evaluate(ToolCall(id="c", name="pay"))
    assert (verdict.rule, verdict.approvers, verdict.timeout) == ("tools.pay", ("finance",), 300.0)


def test_suspicious_values_are_warned_about():
    policy = load(
        """
        rules:
          - deny: transfer
            when: {amount: {gt: 1e3}}
          - allow: read
            timeout: 5m
        """
    )
    assert [str(w) for w in policy.warnings] == [
        "p.yaml:4:25: rules[0].when.amount.gt: '1e3' is text, so it is compared with text only; "
        "for a number write it as one (1000, 1.0e+3)",
        "p.yaml:6:5: rules[1].timeout: 'timeout' has no effect on a rule that does not ask",
    ]


@pytest.mark.parametrize("version", ["true", "1.0", "'1'"])
def test_the_version_must_be_the_integer_1(version: str):
    [problem] = problems(f"version: {version}\n")
    assert "unsupported version" in problem


def test_a_thousand_problems_are_all_reported_with_their_lines():
    text = "rules:\n" + "".join(f"  - deny: 'bad{i}['\n" for i in range(1000))
    with pytest.raises(PolicyError) as caught:
        Policy.from_yaml(text, source="big.yaml")
    found = caught.value.problems
    assert len(found) == 1000
    assert [p.line for p in found] == list(range(2, 1002))


FLOW = "rules:\n  - ask: x\n    when: {a: {eq: "  # 5 levels deep where the list begins


@pytest.mark.parametrize(
    ("text", "where"),
    [
        # YAML's C reader crashed the process on this one: the 96th bracket is the 101st level.
        (FLOW + "[" * 100_000 + "]" * 100_000 + "}}\n", f"3:{len(FLOW.splitlines()[-1]) + 96}"),
        ("rules:\n" + "".join("  " * i + "-\n" for i in range(1, 300)), "101:201"),
        ("rules:\n  - " + "- " * 3000 + "x\n", "2:201"),
    ],
)
def test_a_document_nested_past_100_levels_is_refused_at_its_line_and_column(text: str, where: str):
    assert problems(text) == [f"p.yaml:{where}: the document is nested more than 100 levels deep"]


def test_a_json_policy_too_deep_for_the_json_reader_is_refused_at_its_place(tmp_path: Path):
    path = tmp_path / "deep.json"
    head = '{"rules": [{"ask": "x", "when": {"a": {"eq": '  # 5 levels deep
    path.write_text(head + "[" * 1500 + "]" * 1500 + "}}}]}")
    with pytest.raises(PolicyError) as caught:
        Policy.from_file(path)
    where = f"1:{len(head) + 96}"
    assert str(caught.value) == f"{path}:{where}: the document is nested more than 100 levels deep"


def test_a_condition_value_nested_past_64_levels_is_refused_where_it_stands():
    deep = "[" * 65 + "]" * 65
    assert problems(f"rules:\n  - ask: x\n    when: {{a: {{eq: {deep}}}}}\n") == [
        "p.yaml:3:20: rules[0].when.a.eq: 'eq' has a value nested more than 64 levels deep"
    ]
