"""Each seed's own configuration, loaded as it is, gives the verdicts its system would."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from signoff import Policy, PolicyEngine, PolicyError, ToolCall

SEEDS = Path(__file__).parent / "seeds"


def verdicts(policy: Policy, calls: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    engine = PolicyEngine(policy)
    return {
        name: engine.evaluate(ToolCall(id="c", name=name, **where)).kind  # type: ignore[arg-type]
        for name, where in calls.items()
    }


def test_dcaf_file_blacklist_denies_auto_approved_runs_and_the_rest_asks():
    """Seed 003: 'Matches neither → tool requires user approval'."""
    policy = Policy.from_file(SEEDS / "dcaf_mcp_duplo.yaml")
    on = {"server": "mcp-duplo"}
    assert verdicts(
        policy,
        {
            "tenant_delete": on,
            "host_terminate": on,
            "admin_reset": on,
            "service_update_image": on,
            "pods_list": on,
            "jit_k8s": on,
            "system_health": on,
            "service_restart": on,
            "create_tenant": on,
        },
    ) == {
        "tenant_delete": "deny",
        "host_terminate": "deny",
        "admin_reset": "deny",
        "service_update_image": "deny",
        "pods_list": "allow",
        "jit_k8s": "allow",
        "system_health": "allow",
        "service_restart": "ask",
        "create_tenant": "ask",
    }


def test_dcaf_blacklist_wins_over_auto_approve_when_both_match():
    policy = Policy.from_file(SEEDS / "dcaf_mcp_duplo.yaml")
    # `*_update*` is blacklisted and `*_config*` auto-approved: deny wins, as in DCAF.
    assert verdicts(policy, {"cluster_config_update": {"server": "mcp-duplo"}}) == {
        "cluster_config_update": "deny"
    }


def test_dcaf_servers_ask_for_unmatched_tools_even_when_the_global_default_allows():
    policy = Policy.from_dict(
        {
            "default": "allow",
            "servers": {"k8s": {"exclude_tools": ["*_delete*"], "auto_approve_tools": ["*_list*"]}},
        }
    )
    assert verdicts(
        policy,
        {
            "pod_delete": {"server": "k8s"},
            "pod_list": {"server": "k8s"},
            "pod_exec": {"server": "k8s"},
        },
    ) == {"pod_delete": "deny", "pod_list": "allow", "pod_exec": "ask"}
    # A call from elsewhere keeps the global default.
    assert verdicts(policy, {"pod_exec": {}}) == {"pod_exec": "allow"}


def test_dcaf_mcptool_include_tools_denies_what_it_does_not_match():
    """Seed 003's MCPTool keyword arguments: include, exclude, auto-approve."""
    policy = Policy.from_dict(
        {
            "servers": {
                "k8s": {
                    "url": "http://127.0.0.1:9000/mcp",
                    "include_tools": ["pod_*", "deployment_*"],
                    "exclude_tools": ["*_delete*"],
                    "auto_approve_tools": ["*_list*", "*_get*"],
                }
            }
        }
    )
    on = {"server": "k8s"}
    assert verdicts(
        policy,
        {"pod_list": on, "pod_delete": on, "deployment_scale": on, "node_list": on},
    ) == {"pod_list": "allow", "pod_delete": "deny", "deployment_scale": "ask", "node_list": "deny"}
    reason = PolicyEngine(policy).evaluate(ToolCall(id="c", name="node_list", server="k8s")).reason
    assert reason == "the tool is not in include_tools of server 'k8s'"


def test_kagent_agent_resource_listed_tools_run_and_the_ones_requiring_approval_ask():
    """Seed 000: requireApproval ⊆ toolNames; other tools are not given to the agent."""
    policy = Policy.from_file(SEEDS / "kagent_agent.yaml")
    on = {"server": "filesystem-server"}
    assert verdicts(
        policy,
        {"read_file": on, "write_file": on, "delete_file": on, "move_file": on},
    ) == {"read_file": "allow", "write_file": "ask", "delete_file": "ask", "move_file": "deny"}


def test_kagent_require_approval_outside_tool_names_is_refused_in_kagent_words(tmp_path: Path):
    crd = (SEEDS / "kagent_agent.yaml").read_text().replace("- write_file\n", "- write_files\n", 1)
    path = tmp_path / "agent.yaml"
    path.write_text(crd)
    with pytest.raises(PolicyError) as caught:
        Policy.from_file(path)
    [problem] = caught.value.problems
    assert str(problem) == (
        f"{path}:20:13: spec.declarative.tools[0].mcpServer.requireApproval[1]: "
        "each requireApproval entry must also appear in toolNames: "
        "'write_file' is not in ['read_file', 'write_files', 'delete_file']"
    )


def test_kagent_require_approval_without_tool_names_is_refused():
    with pytest.raises(
        PolicyError, match="each requireApproval entry must also appear in toolNames"
    ):
        Policy.from_dict({"servers": {"fs": {"requireApproval": ["write_file"]}}})


def test_kagent_adk_config_form_with_snake_case_keys():
    """kagent's Python runtime config: `tools` + `require_approval` on an MCP server entry."""
    policy = Policy.from_dict(
        {
            "servers": {
                "fs": {
                    "params": {"url": "http://127.0.0.1:9000/mcp"},
                    "tools": ["read_file", "write_file"],
                    "require_approval": ["write_file"],
                }
            }
        }
    )
    on = {"server": "fs"}
    assert verdicts(policy, {"read_file": on, "write_file": on, "rm": on}) == {
        "read_file": "allow",
        "write_file": "ask",
        "rm": "deny",
    }
    with pytest.raises(PolicyError, match="each require_approval entry must also appear in tools"):
        Policy.from_dict({"servers": {"fs": {"tools": ["a"], "require_approval": ["b"]}}})


def test_agent_os_toggles_ask_for_true_allow_false_and_ignore_unknown_names_with_a_warning():
    """Seed 002 §1.3: keys must match the tools list; invalid keys are ignored."""
    policy = Policy.from_file(SEEDS / "agent_os_tools_agent.yaml")
    mcp, rag = {"server": "mcp"}, {"server": "rag"}
    assert verdicts(
        policy,
        {
            "search_web": mcp,
            "send_email": mcp,
            "delete_record": mcp,
            "create_ticket": mcp,
            "launch_rocket": mcp,
            "collection_search": rag,
            "collection_write": rag,
        },
    ) == {
        "search_web": "allow",  # listed, not configured: defaults to no approval
        "send_email": "ask",
        "delete_record": "ask",
        "create_ticket": "allow",
        "launch_rocket": "deny",  # not among the agent's tools at all
        "collection_search": "allow",
        "collection_write": "ask",
    }
    [warning] = policy.warnings
    assert str(warning).startswith(
        f"{SEEDS / 'agent_os_tools_agent.yaml'}:11:7: servers.mcp.tool_approvals.launch_rocket: "
        "ignored: 'launch_rocket' is not one of the listed tools"
    )


def test_agent_os_toggles_at_the_top_level_without_a_tool_list():
    policy = Policy.from_yaml("default: allow\ntool_approvals: {send_email: true, search: false}\n")
    assert verdicts(policy, {"send_email": {}, "search": {}, "other": {}}) == {
        "send_email": "ask",
        "search": "allow",
        "other": "allow",
    }
    with pytest.raises(PolicyError, match=r"tool_approvals\['x'\] must be true or false"):
        Policy.from_dict({"tool_approvals": {"x": "yes"}})


def test_sub_agents_carry_their_own_approval_config():
    """Seed 002: 'Sub-agent inherits tool from parent → use sub-agent's approval config'."""
    policy = Policy.from_yaml(
        textwrap.dedent(
            """
            tool_approvals: {write_file: true, web_search: false}
            rules:
              - deny: "admin_*"
            agents:
              coordinator/writer:
                tool_approvals: {write_file: false}
              coordinator/researcher:
                tools: [web_search, read_file]
                default: ask
            """
        )
    )
    engine = PolicyEngine(policy)

    def kind(name: str, agent: str | None) -> str:
        return engine.evaluate(ToolCall(id="c", name=name, agent=agent)).kind

    assert kind("write_file", None) == "ask"
    assert kind("write_file", "coordinator") == "ask"
    assert kind("write_file", "coordinator/writer") == "allow"  # its own toggle wins
    assert kind("admin_drop", "coordinator/writer") == "deny"  # a global deny still holds
    assert kind("web_search", "coordinator/researcher") == "allow"
    assert kind("write_file", "coordinator/researcher") == "deny"  # not one of its tools
