"""Loading the unified format, and every kind of mistake reported with file, line and column."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from signoff import Policy, PolicyEngine, PolicyError, ToolCall


def load(text: str) -> Policy:
    return Policy.from_yaml(textwrap.dedent(text), source="signoff.yaml")


def problems(text: str) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        load(text)
    return [str(p) for p in caught.value.problems]


def verdict(policy: Policy, name: str, **kwargs: object) -> str:
    return PolicyEngine(policy).evaluate(ToolCall(id="c", name=name, **kwargs)).kind  # type: ignore[arg-type]


def test_the_architecture_example_loads_into_rules_with_ids_from_their_place():
    policy = load(
        """
        default: ask
        rules:
          - deny:  ["*_delete*", "*_terminate*", "admin_*"]
          - allow: ["*_list*", "*_get*", "system_*"]
          - ask:   ["write_file"]
            when:  {path: {glob: "/etc/**"}}
            timeout: 30m
            approvers: [ops]
        tools:
          send_email: {require_approval: true}
        servers:
          filesystem:
            tools: [read_file, write_file, delete_file]
            require_approval: [write_file, delete_file]
        agents:
          coordinator/researcher: {default: allow}
        """
    )
    assert [r.id for r in policy.rules] == [
        "rules[0]",
        "rules[1]",
        "rules[2]",
        "tools.send_email",
        "servers.filesystem.tools.unlisted",
        "servers.filesystem.tools",
        "servers.filesystem.require_approval",
    ]
    ask = policy.rules[2]
    assert (ask.timeout, ask.approvers, ask.tools) == (1800.0, ("ops",), ("write_file",))
    assert ask.when[0].path == "path"
    assert [(d.id, d.kind, d.pattern, d.verdict) for d in policy.section_defaults] == [
        ("agents.coordinator/researcher.default", "agent", "coordinator/researcher", "allow")
    ]


def test_an_empty_document_is_a_policy_that_asks_for_everything():
    policy = load("")
    assert policy.rules == ()
    assert verdict(policy, "anything") == "ask"


def test_the_version_is_stable_and_changes_with_the_rules():
    text = "rules: [{deny: rm}]\n"
    assert load(text).version == load("# a comment\nrules:\n  - deny: [rm]\n").version
    assert load(text).version != load("rules: [{ask: rm}]\n").version
    assert load(text).version != load("default: allow\n" + text).version
    assert len(load(text).version) == 16


def test_a_rule_with_an_explicit_id_keeps_it_and_ids_must_be_unique():
    policy = load("rules: [{id: no-rm, deny: rm}]")
    assert policy.rules[0].id == "no-rm"
    [problem] = problems(
        """
        rules:
          - {id: same, deny: rm}
          - {id: same, ask: cp}
        """
    )
    assert problem == (
        "signoff.yaml:4:10: rules[1].id: rule id 'same' is already the id of the rule at rules[0]"
    )
    [problem] = problems(
        """
        rules:
          - {id: "rules[1]", deny: rm}
          - {ask: cp}
        """
    )
    assert problem == (
        "signoff.yaml:3:10: rules[0].id: "
        "rule id 'rules[1]' is already the id of the rule at rules[1]"
    )


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (30, 30.0),
        (1.5, 1.5),
        ("45s", 45.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("2d", 172800.0),
        ("1w", 604800.0),
        ("250ms", 0.25),
    ],
)
def test_timeouts_are_seconds_or_durations(value: object, seconds: float):
    policy = Policy.from_dict({"rules": [{"ask": "x", "timeout": value}]})
    assert policy.rules[0].timeout == seconds


@pytest.mark.parametrize("value", ["soon", "5 minutes", 0, -3, "", True, "5m5"])
def test_a_bad_timeout_is_refused(value: object):
    with pytest.raises(PolicyError, match="timeout must be a positive number of seconds"):
        Policy.from_dict({"rules": [{"ask": "x", "timeout": value}]})


def test_an_invalid_glob_names_file_line_column_and_the_pattern():
    [problem] = problems(
        """
        rules:
          - deny: ["ok_*", "bad[abc"]
        """
    )
    assert problem.startswith("signoff.yaml:3:20: rules[0].deny[1]: invalid glob 'bad[abc': ")
    assert "'[' at position 4 is never closed" in problem


def test_an_invalid_regex_names_where_it_is():
    [problem] = problems(
        """
        rules:
          - ask: run_sql
            when: {query: {regex: "(DROP|DELETE"}}
        """
    )
    assert problem.startswith("signoff.yaml:4:27: rules[0].when.query.regex: invalid regex")


def test_an_unknown_key_is_pointed_at_with_a_suggestion():
    [problem] = problems(
        """
        rules:
          - ask: x
            timout: 5m
        """
    )
    assert problem.startswith(
        "signoff.yaml:4:5: rules[0].timout: unknown key 'timout' in a rule; did you mean 'timeout'?"
    )


def test_an_unknown_top_level_key_is_refused():
    [problem] = problems("defualt: deny\n")
    assert problem.startswith("signoff.yaml:1:1: defualt: unknown key 'defualt' in the policy")
    assert "did you mean 'default'?" in problem


def test_wrong_types_are_each_reported_in_one_pass():
    found = problems(
        """
        default: maybe
        rules:
          - ask: [send_email, 42]
            priority: high
            forbid_self_approval: "yes"
          - deny: ""
          - allow: x
            deny: y
        """
    )
    assert found == [
        "signoff.yaml:2:10: default: default must be one of allow, ask, deny; not 'maybe'",
        "signoff.yaml:4:23: rules[0].ask[1]: tool patterns must be a non-empty string, not 42",
        "signoff.yaml:5:15: rules[0].priority: priority must be an integer, not 'high'",
        "signoff.yaml:6:27: rules[0].forbid_self_approval: forbid_self_approval must be "
        "true or false, not 'yes'",
        "signoff.yaml:7:11: rules[1].deny: tool patterns must be a non-empty string, not ''",
        "signoff.yaml:8:5: rules[2]: a rule needs exactly one of allow, ask, deny "
        "(found deny and allow)",
    ]


def test_an_unknown_condition_operator_is_refused():
    [problem] = problems(
        """
        rules:
          - ask: x
            when: {size: {bigger: 3}}
        """
    )
    assert problem.startswith(
        "signoff.yaml:4:19: rules[0].when.size.bigger: unknown condition 'bigger'"
    )


def test_a_condition_operand_of_the_wrong_type_is_refused():
    [problem] = problems(
        """
        rules:
          - ask: x
            when: {tags: {in: prod}}
        """
    )
    assert (
        problem
        == "signoff.yaml:4:23: rules[0].when.tags.in: 'in' needs a list of values, not 'prod'"
    )


def test_a_malformed_path_is_refused():
    with pytest.raises(PolicyError, match=r"path 'a\.\.b' has an empty segment"):
        Policy.from_dict({"rules": [{"ask": "x", "when": {"a..b": 1}}]})


def test_a_duplicate_key_is_a_mistake_not_a_silent_override():
    [problem] = problems(
        """
        rules:
          - deny: rm
            deny: cp
        """
    )
    assert problem.startswith("signoff.yaml:4:5: duplicate key 'deny' (first defined on line 3)")


def test_a_yaml_syntax_error_names_its_line_and_column():
    [problem] = problems("rules:\n  - deny: [rm\n")
    assert problem.startswith("signoff.yaml:3:1: ")


def test_a_rule_in_a_server_section_may_not_name_another_server():
    [problem] = problems(
        """
        servers:
          fs:
            rules: [{deny: rm, server: other}]
        """
    )
    assert "this rule is in the section of server 'fs'; remove 'server'" in problem


def test_a_policy_given_as_data_names_the_path_without_a_line():
    with pytest.raises(PolicyError) as caught:
        Policy.from_dict({"rules": [{"deny": "x["}]})
    assert str(caught.value).startswith("<policy>: rules[0].deny: invalid glob 'x['")


def test_from_file_reads_yaml_and_json_and_names_the_file(tmp_path: Path):
    yaml_file = tmp_path / "policy.yaml"
    yaml_file.write_text("rules:\n  - deny: rm\n")
    json_file = tmp_path / "policy.json"
    json_file.write_text('{"rules": [{"deny": "rm"}]}')
    assert Policy.from_file(yaml_file).version == Policy.from_file(json_file).version
    json_file.write_text('{"rules": [{"deny": "rm["}]}')
    with pytest.raises(PolicyError) as caught:
        Policy.from_file(json_file)
    assert str(caught.value).startswith(f"{json_file}:1:21: rules[0].deny: invalid glob")
    json_file.write_text('{"rules": [}')
    with pytest.raises(PolicyError, match=rf"{json_file}:1:12: Expecting value"):
        Policy.from_file(json_file)


def test_a_missing_file_is_a_policy_error(tmp_path: Path):
    with pytest.raises(PolicyError, match="cannot read the policy"):
        Policy.from_file(tmp_path / "nope.yaml")


def test_keys_that_belong_to_other_parts_of_signoff_are_accepted():
    policy = load(
        """
        database: sqlite+aiosqlite:///signoff.db
        gateway: {wait: 30s}
        auth: {tokens: {}}
        servers:
          fs:
            command: npx
            args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]
            exclude_tools: ["*delete*", "move_file"]
            auto_approve_tools: ["read_*", "list_*", "search_*"]
        """
    )
    assert verdict(policy, "read_text_file", server="fs") == "allow"
    assert verdict(policy, "move_file", server="fs") == "deny"
    assert verdict(policy, "write_file", server="fs") == "ask"


def test_per_tool_toggles_take_booleans_verdicts_and_options():
    policy = load(
        """
        default: allow
        tools:
          send_email: {require_approval: true, timeout: 1h, approvers: [finance]}
          drop_table: deny
          lint: false
          deploy: {verdict: ask, forbid_self_approval: true}
        """
    )
    engine = PolicyEngine(policy)
    email = engine.evaluate(ToolCall(id="1", name="send_email"))
    assert (email.kind, email.timeout, email.approvers) == ("ask", 3600.0, ("finance",))
    assert verdict(policy, "drop_table") == "deny"
    assert verdict(policy, "lint") == "allow"
    assert engine.evaluate(ToolCall(id="1", name="deploy")).forbid_self_approval is True
    [problem] = problems("tools:\n  x: {require_approval: true, verdict: ask}\n")
    assert "give exactly one of 'require_approval' or 'verdict'" in problem


def test_a_rule_marked_destructive_says_so_in_its_verdict_and_its_place_when_wrong():
    policy = load(
        """
        rules:
          - ask: drop_table
            destructive: true
        tools:
          delete_pod: {verdict: ask, destructive: true}
          read_file: {verdict: allow, destructive: true}
        """
    )
    engine = PolicyEngine(policy)
    assert engine.evaluate(ToolCall(id="1", name="drop_table")).destructive is True
    assert engine.evaluate(ToolCall(id="1", name="delete_pod")).destructive is True
    assert engine.evaluate(ToolCall(id="1", name="send_email")).destructive is False
    assert [str(w) for w in policy.warnings] == [
        "signoff.yaml:7:31: tools.read_file.destructive: 'destructive' has no effect on a rule "
        "that does not ask",
    ]
    assert policy.rules[0].to_dict()["destructive"] is True  # as it would be written
    assert Policy.from_dict({"rules": [policy.rules[0].to_dict()]}).rules[0].destructive
    [problem] = problems("rules:\n  - ask: x\n    destructive: always\n")
    assert problem == (
        "signoff.yaml:3:18: rules[0].destructive: destructive must be true or false, not 'always'"
    )


def test_a_rule_marked_idempotent_says_so_in_its_verdict_and_its_place_when_wrong():
    policy = load(
        """
        rules:
          - allow: ["get_*", "list_*"]
            idempotent: true
        tools:
          search: {verdict: allow, idempotent: true}
          drop_table: {verdict: deny, idempotent: true}
        """
    )
    engine = PolicyEngine(policy)
    assert engine.evaluate(ToolCall(id="1", name="get_user")).idempotent is True
    assert engine.evaluate(ToolCall(id="1", name="search")).idempotent is True
    assert engine.evaluate(ToolCall(id="1", name="send_email")).idempotent is False
    assert [str(w) for w in policy.warnings] == [
        "signoff.yaml:7:31: tools.drop_table.idempotent: 'idempotent' has no effect on a rule "
        "that denies",
    ]
    assert policy.rules[0].to_dict()["idempotent"] is True  # as it would be written
    assert Policy.from_dict({"rules": [policy.rules[0].to_dict()]}).rules[0].idempotent
    [problem] = problems("rules:\n  - allow: x\n    idempotent: mostly\n")
    assert problem == (
        "signoff.yaml:3:17: rules[0].idempotent: idempotent must be true or false, not 'mostly'"
    )


def test_an_unsupported_version_is_refused():
    [problem] = problems("version: 2\n")
    assert problem == "signoff.yaml:1:10: version: unsupported version 2; use 1"


def test_a_gateway_policy_that_allows_by_default_is_warned_its_reads_and_prompts_run():
    fronted = {"default": "allow", "servers": {"fs": {"command": "x", "toolNames": ["read_file"]}}}
    [warning] = Policy.from_dict(fronted).warnings
    assert warning.path == "default"
    assert "resource reads and prompts are judged by this default (allow)" in warning.message
    named = {**fronted, "rules": [{"ask": {"resource": "*"}}]}
    [warning] = Policy.from_dict(named).warnings
    assert "MCP servers' prompts are judged" in warning.message
    both = {**fronted, "rules": [{"ask": {"resource": "*"}}, {"allow": {"prompt": "*"}}]}
    assert Policy.from_dict(both).warnings == ()
    assert Policy.from_dict({**fronted, "default": "ask"}).warnings == ()
    policy_only = {"default": "allow", "servers": {"fs": {"tool_blacklist": ["x"]}}}
    assert Policy.from_dict(policy_only).warnings == ()  # no server the gateway fronts
