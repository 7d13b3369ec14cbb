"""One loader for the unified policy format and every seed's format as sugar for it.

The unified format (ARCHITECTURE §4) is ``default``, ``rules``, ``tools``, ``servers`` and
``agents``. Each section (the top level, a server, an agent) also accepts the formats users bring:

- kagent: ``toolNames`` + ``requireApproval`` (or ``tools`` + ``require_approval``): the listed
  tools run, those that require approval ask, and any other tool is denied.
- agent-os: ``tool_approvals: {name: bool}``: true asks, false allows; a name that is not in the
  section's tool list is ignored with a warning.
- DCAF: ``tool_blacklist`` / ``exclude_tools`` deny, ``auto_approved_tools`` /
  ``auto_approve_tools`` allow, ``include_tools`` denies what it does not match, and everything
  else asks. A whole DCAF file (server names at the top) and a whole kagent ``Agent`` resource are
  recognized as such.
"""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path as FilePath
from typing import Any, Literal

from signoff.errors import PolicyError, Problem
from signoff.policy.conditions import OPERATORS, Condition, compile_condition
from signoff.policy.model import Policy, Rule, SectionDefault
from signoff.policy.reader import Reader, Recorded
from signoff.policy.reader import show as _show
from signoff.policy.source import Locator, Path, format_path, parse_text, paused_gc
from signoff.types import CallKind, Escalation, OnTimeout, Quorum, VerdictKind, canonical_json

__all__ = ["OTHER_TOP_KEYS", "load_data", "load_file", "load_text"]

_LIST_KEYS = ("tools", "toolNames", "enabled_tools")
_DCAF_KEYS = frozenset(
    {
        "tool_blacklist",
        "exclude_tools",
        "include_tools",
        "auto_approved_tools",
        "auto_approve_tools",
    }
)
_SECTION_KEYS = frozenset(
    {"default", "rules", *_LIST_KEYS, "tool_approvals", "require_approval", "requireApproval"}
    | _DCAF_KEYS
)
# Keys read by other parts of signoff (the store, the server, the MCP gateway).
OTHER_TOP_KEYS = frozenset(
    {"database", "auth", "gateway", "redact", "limits", "allowed_hosts", "notify", "web"}
    | {"retention", "metrics", "runs"}
)
_TOP_KEYS = _SECTION_KEYS | {"version", "servers", "agents"} | OTHER_TOP_KEYS
# How the MCP gateway reaches a server; the policy ignores them.
_CONNECTION_KEYS = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "path",
        "headers",
        "params",
        "transport",
        "transport_type",
        "timeout_seconds",
        "tool_name_prefix",
        "allowed_headers",
        "preview",
    }
)
_SERVER_KEYS = _SECTION_KEYS | _CONNECTION_KEYS
_KAGENT_BLOCK_KEYS = frozenset(
    {"name", "kind", "apiGroup", "toolNames", "requireApproval", "allowedHeaders"}
)
_RULE_OPTIONS = frozenset(
    {"timeout", "approvers", "forbid_self_approval", "destructive", "reason", "priority",
     "approvals", "escalate", "on_timeout"}
)  # fmt: skip
_ASKING_OPTIONS = ("timeout", "approvers", "forbid_self_approval", "destructive", "approvals",
                   "escalate", "on_timeout")  # fmt: skip
_APPROVALS_KEYS = frozenset({"count", "distinct", "from"})
_ESCALATION_KEYS = frozenset({"after", "to"})
_ON_TIMEOUT_KEYS = frozenset({"after", "decide", "reason", "despite_approvers"})
MAX_QUORUM = 10
"""The most people a rule may require: more is a mistake, not a safeguard."""
MAX_ESCALATIONS = 10
_RULE_KEYS = frozenset({"allow", "ask", "deny", "id", "except", "server", "agent", "when"})
_CALL_KINDS: tuple[CallKind, ...] = ("tool", "resource", "prompt")
_RULE_KEYS |= _RULE_OPTIONS
_TOGGLE_KEYS = frozenset({"require_approval", "verdict"}) | _RULE_OPTIONS


def load_file(path: FilePath) -> Policy:
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(
            [Problem(message=f"cannot read the policy: {exc}", source=source)]
        ) from None
    data = parse_text(text, source=source, json_only=path.suffix == ".json")
    return load_data(data, source=source, text=text)


def load_text(text: str, *, source: str | None = None) -> Policy:
    return load_data(parse_text(text, source=source), source=source, text=text)


def load_data(data: Any, *, source: str | None = None, text: str | None = None) -> Policy:
    """Validate `data` (parsed YAML or JSON) into a `Policy`, or raise `PolicyError`."""
    builder = _Builder()
    with paused_gc():
        builder.document({} if data is None else data)
    if builder.reader.problems:
        raise PolicyError(locate(builder.reader.problems, source, text))
    if builder.fronted and builder.default == "allow":
        builder.unjudged_kinds()
    policy = Policy(
        rules=tuple(builder.rules),
        default=builder.default,
        section_defaults=tuple(builder.section_defaults),
        version="",
        source=source,
        warnings=tuple(locate(builder.reader.warnings, source, text)),
    )
    with paused_gc():
        return replace(policy, version=_version(policy))


@dataclass(frozen=True)
class _Scope:
    """Where a section's rules apply: everywhere, to one server, or to one agent path."""

    kind: Literal["global", "server", "agent"]
    name: str | None = None


class _Builder:
    def __init__(self) -> None:
        self.reader = Reader()
        self.rules: list[Rule] = []
        self.section_defaults: list[SectionDefault] = []
        self.default: VerdictKind = "ask"
        self._ids: dict[str, tuple[Path, bool]] = {}
        self.fronted = False
        """Whether a server section says how to reach the server (the MCP gateway fronts it)."""
        """Rule id → where the rule stands and whether its id was written by hand."""

    # -- documents -------------------------------------------------------------------------

    def unjudged_kinds(self) -> None:
        """Warn when the MCP gateway's reads and prompts run by an ``allow`` default that no
        rule of theirs narrows: a policy written for tools lets them all through."""
        named = {rule.kind for rule in self.rules}
        unnamed = [k for k in ("resource", "prompt") if k not in named]
        if unnamed:
            what = " and ".join(f"{k} reads" if k == "resource" else "prompts" for k in unnamed)
            rules = ", ".join(f"{{{k}: ...}}" for k in unnamed)
            self.reader.warn(
                ("default",),
                f"the MCP servers' {what} are judged by this default (allow), and no rule names "
                f"them: every one runs at once; judge them with {rules} rules",
                at_key=True,
            )

    def document(self, data: Any) -> None:
        top = self.reader.mapping(data, (), "a policy")
        if top is None:
            return
        if str(top.get("apiVersion", "")).startswith("kagent.dev/"):
            self._kagent_resource(top)
        elif (
            top
            and not _TOP_KEYS.intersection(top)
            and all(_is_dcaf_server(v) for v in top.values())
        ):
            self._servers(top, ())
        else:
            self.reader.keys(top, (), _TOP_KEYS, "the policy")
            version = top.get("version", 1)
            if type(version) is not int or version != 1:
                self.reader.error(("version",), f"unsupported version {version!r}; use 1")
            self._section(top, (), _Scope("global"))

    def _agents(self, agents: dict[str, Any], path: Path) -> None:
        for name, section in agents.items():
            where = (*path, name)
            if self.reader.globs(name, where, "an agent path") and (
                body := self._map(section, where)
            ):
                self.reader.keys(body, where, _SECTION_KEYS, f"agent {name!r}")
                self._section(body, where, _Scope("agent", name))

    def _servers(self, servers: dict[str, Any], path: Path) -> None:
        for name, section in servers.items():
            where = (*path, name)
            if self.reader.globs(name, where, "a server name") and (
                body := self._map(section, where)
            ):
                self.reader.keys(body, where, _SERVER_KEYS, f"server {name!r}")
                self._section(body, where, _Scope("server", name))
                if _CONNECTION_KEYS.intersection(body):
                    self.fronted = True

    def _kagent_resource(self, top: dict[str, Any]) -> None:
        """A kagent ``Agent``: each ``McpServer`` tool block becomes a server section."""
        tools_path: Path = ("spec", "declarative", "tools")
        node: Any = top
        for step in tools_path:
            node = node.get(step) if isinstance(node, dict) else None
        if node is None:
            return
        if not isinstance(node, list):
            self.reader.error(tools_path, "spec.declarative.tools must be a list")
            return
        for i, entry in enumerate(node):
            block = entry.get("mcpServer") if isinstance(entry, dict) else None
            path = (*tools_path, i, "mcpServer")
            if block is None or not (body := self._map(block, path)):
                continue
            self.reader.keys(body, path, _KAGENT_BLOCK_KEYS, "an mcpServer tool")
            if (name := self.reader.string(body.get("name"), (*path, "name"), "name")) is not None:
                self._section(body, path, _Scope("server", name))

    # -- sections --------------------------------------------------------------------------

    def _section(self, data: dict[str, Any], path: Path, scope: _Scope) -> None:
        """Each key of a section in the order of the file: that order breaks ties."""
        listed = self._listed(data, path)
        approval_keys = [k for k in ("require_approval", "requireApproval") if k in data]
        if len(approval_keys) > 1:
            self.reader.error(
                (*path, approval_keys[1]), "give either 'require_approval' or 'requireApproval'"
            )
        for key, value in data.items():
            where = (*path, key)
            if key == "default":
                verdict = self.reader.verdict(value, where, "default")
                if verdict is not None:
                    self._set_default(path, scope, verdict)
            elif key == "rules":
                if not isinstance(value, list):
                    self.reader.error(where, f"rules must be a list of rules, not {_show(value)}")
                    continue
                for i, rule in enumerate(value):
                    self._rule(rule, (*where, i), scope)
            elif key == "tools" and isinstance(value, dict):
                for name, toggle in (self._map(value, where) or {}).items():
                    self._toggle(name, toggle, (*where, name), scope)
            elif listed is not None and key == listed[0]:
                self._tool_list(listed, path, scope)
            elif key in approval_keys[:1]:
                self._require_approval(key, value, path, scope, listed)
            elif key == "tool_approvals":
                self._tool_approvals(value, path, scope, listed)
            elif key in _DCAF_KEYS:
                self._dcaf(key, value, path, scope)
            elif (
                scope.kind == "global" and key == "servers" and (servers := self._map(value, where))
            ):
                self._servers(servers, where)
            elif scope.kind == "global" and key == "agents" and (agents := self._map(value, where)):
                self._agents(agents, where)
        # DCAF: a tool that matches neither list asks, whatever the global default says.
        if scope.kind != "global" and "default" not in data and _DCAF_KEYS.intersection(data):
            self._set_default(path, scope, "ask")

    def _set_default(self, path: Path, scope: _Scope, verdict: VerdictKind) -> None:
        if scope.kind == "global":
            self.default = verdict
        else:
            assert scope.name is not None  # server and agent scopes are always named
            self.section_defaults.append(
                SectionDefault(
                    id=format_path((*path, "default")),
                    kind=scope.kind,
                    pattern=scope.name,
                    verdict=verdict,
                )
            )

    def _listed(self, data: dict[str, Any], path: Path) -> tuple[str, tuple[str, ...]] | None:
        """The section's tool list (kagent ``toolNames``, agent-os ``tools``) and its key.

        An empty list is no list, as in kagent where an omitted ``toolNames`` means every tool.
        """
        present = [k for k in _LIST_KEYS if k in data and not isinstance(data[k], dict)]
        if len(present) > 1:
            self.reader.error((*path, present[1]), f"give either {present[0]!r} or {present[1]!r}")
            return None
        if not present or data[present[0]] == []:
            return None
        key = present[0]
        names = self.reader.globs(data[key], (*path, key), f"{key} entries")
        return None if names is None else (key, names)

    def _tool_list(self, listed: tuple[str, tuple[str, ...]], path: Path, scope: _Scope) -> None:
        """Listed tools run; any other tool of the section is denied."""
        key, names = listed
        self._add(
            (*path, key, "unlisted"),
            scope,
            effect="deny",
            tools=("*",),
            except_tools=names,
            reason=f"the tool is not among the tools listed for {self._describe(scope)}",
        )
        self._add((*path, key), scope, effect="allow", tools=names)

    def _require_approval(
        self,
        key: str,
        value: Any,
        path: Path,
        scope: _Scope,
        listed: tuple[str, tuple[str, ...]] | None,
    ) -> None:
        names = self.reader.globs(value, (*path, key), f"{key} entries", allow_empty=True)
        if not names:
            return
        if listed is None and key == "requireApproval":
            self.reader.error(
                (*path, key), "each requireApproval entry must also appear in toolNames"
            )
            return
        if listed is not None:
            list_key, tools = listed
            for i, name in enumerate(names):
                if not _covered(name, tools):
                    self.reader.error(
                        (*path, key, i),
                        f"each {key} entry must also appear in {list_key}: "
                        f"{name!r} is not in {list(tools)!r}",
                    )
        self._add((*path, key), scope, effect="ask", tools=names)

    def _tool_approvals(
        self, value: Any, path: Path, scope: _Scope, listed: tuple[str, tuple[str, ...]] | None
    ) -> None:
        """agent-os ``tool_approvals: {name: bool}``."""
        where: Path = (*path, "tool_approvals")
        for name, required in (self._map(value, where) or {}).items():
            item = (*where, name)
            if self.reader.globs(name, item, "a tool name") is None:
                continue
            if listed is not None and not _covered(name, listed[1]):
                self.reader.warn(
                    item,
                    f"ignored: {name!r} is not one of the listed tools {list(listed[1])!r}",
                    at_key=True,
                )
                continue
            flag = self.reader.boolean(required, item, f"tool_approvals[{name!r}]")
            if flag is not None:
                self._add(item, scope, effect="ask" if flag else "allow", tools=(name,))

    def _dcaf(self, key: str, value: Any, path: Path, scope: _Scope) -> None:
        """DCAF's glob lists: deny excluded, deny what include_tools misses, allow auto-approved."""
        patterns = self.reader.globs(value, (*path, key), f"{key} entries", allow_empty=True)
        if not patterns:
            return
        if key in ("tool_blacklist", "exclude_tools"):
            self._add((*path, key), scope, effect="deny", tools=patterns)
        elif key == "include_tools":
            self._add(
                (*path, key),
                scope,
                effect="deny",
                tools=("*",),
                except_tools=patterns,
                reason=f"the tool is not in include_tools of {self._describe(scope)}",
            )
        else:
            self._add((*path, key), scope, effect="allow", tools=patterns)

    # -- rules -----------------------------------------------------------------------------

    def _rule(self, value: Any, path: Path, scope: _Scope) -> None:
        data = self.reader.mapping(value, path, "a rule")
        if data is None:
            return
        self.reader.keys(data, path, _RULE_KEYS, "a rule")
        effects: list[VerdictKind] = [k for k in ("deny", "ask", "allow") if k in data]
        if len(effects) != 1:
            found = " and ".join(effects) if effects else "none"
            self.reader.error(path, f"a rule needs exactly one of allow, ask, deny (found {found})")
            return
        effect = effects[0]
        matched = self._matched(data[effect], (*path, effect))
        if matched is None:
            return
        judged, tools = matched
        fields: dict[str, Any] = {} if judged == "tool" else {"kind": judged}
        if "except" in data:
            fields["except_tools"] = self.reader.globs(data["except"], (*path, "except"), "except")
        for key, kind in (("server", "server"), ("agent", "agent")):
            if key not in data:
                continue
            if scope.kind == kind:
                self.reader.error(
                    (*path, key),
                    f"this rule is in the section of {kind} {scope.name!r}; remove {key!r}",
                    at_key=True,
                )
            fields[f"{key}s"] = self.reader.globs(data[key], (*path, key), f"{key} patterns")
        if "when" in data:
            fields["when"] = self._conditions(data["when"], (*path, "when"))
        if "id" in data:
            fields["id"] = self.reader.string(data["id"], (*path, "id"), "id")
        fields |= self._options(data, path, effect)
        if tools is not None and None not in fields.values():
            self._add(path, scope, effect=effect, tools=tools, **fields)

    def _matched(self, value: Any, path: Path) -> tuple[CallKind, tuple[str, ...] | None] | None:
        """What a rule's effect names: tool globs (``ask: [write_file]``), or one mapping naming
        the kind (``deny: {resource: "file:///secrets/*"}``, ``ask: {prompt: [review]}``)."""
        if not isinstance(value, dict):
            return "tool", self.reader.globs(value, path, "tool patterns")
        kinds = [k for k in _CALL_KINDS if k in value]
        others = sorted(str(k) for k in value if k not in _CALL_KINDS)
        if others or len(kinds) != 1:
            self.reader.error(
                path,
                "name what the rule judges with one of tool, resource or prompt "
                f"(found {', '.join(others or kinds) or 'nothing'})",
            )
            return None
        kind = kinds[0]
        what = {"tool": "tool patterns", "resource": "resource URI patterns",
                "prompt": "prompt patterns"}[kind]  # fmt: skip
        return kind, self.reader.globs(value[kind], (*path, kind), what)

    def _toggle(self, name: str, value: Any, path: Path, scope: _Scope) -> None:
        """A per-tool toggle: ``send_email: {require_approval: true}``, ``ask``, or ``true``."""
        if self.reader.globs(name, path, "a tool name") is None:
            return
        fields: dict[str, Any] = {}
        effect: VerdictKind | None
        if isinstance(value, bool):
            effect = "ask" if value else "allow"
        elif isinstance(value, str):
            effect = self.reader.verdict(value, path, f"the setting of tool {name!r}")
        elif (data := self.reader.mapping(value, path, f"the setting of tool {name!r}")) is None:
            return
        else:
            self.reader.keys(data, path, _TOGGLE_KEYS, f"the setting of tool {name!r}")
            effect = None
            if ("require_approval" in data) == ("verdict" in data):
                self.reader.error(path, "give exactly one of 'require_approval' or 'verdict'")
            elif "verdict" in data:
                effect = self.reader.verdict(data["verdict"], (*path, "verdict"), "verdict")
            else:
                flag = self.reader.boolean(
                    data["require_approval"], (*path, "require_approval"), "require_approval"
                )
                effect = None if flag is None else "ask" if flag else "allow"
            fields = self._options(data, path, effect)
        if effect is not None and None not in fields.values():
            self._add(path, scope, effect=effect, tools=(name,), **fields)

    def _options(
        self, data: dict[str, Any], path: Path, effect: VerdictKind | None
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if effect in ("allow", "deny"):
            for key in _ASKING_OPTIONS:
                if key in data:
                    self.reader.warn(
                        (*path, key),
                        f"{key!r} has no effect on a rule that does not ask",
                        at_key=True,
                    )
        if "priority" in data:
            out["priority"] = self.reader.integer(data["priority"], (*path, "priority"), "priority")
        if "timeout" in data:
            out["timeout"] = self.reader.duration(data["timeout"], (*path, "timeout"))
        if "approvers" in data:
            out["approvers"] = self.reader.strings(
                data["approvers"], (*path, "approvers"), "approvers"
            )
        if "forbid_self_approval" in data:
            out["forbid_self_approval"] = self.reader.boolean(
                data["forbid_self_approval"],
                (*path, "forbid_self_approval"),
                "forbid_self_approval",
            )
        if "destructive" in data:
            out["destructive"] = self.reader.boolean(
                data["destructive"], (*path, "destructive"), "destructive"
            )
        if "reason" in data:
            out["reason"] = self.reader.string(data["reason"], (*path, "reason"), "reason")
        if "approvals" in data:
            out["quorum"] = self._quorum(data["approvals"], (*path, "approvals"))
        if "escalate" in data:
            out["escalate"] = self._escalate(data["escalate"], (*path, "escalate"))
        if "on_timeout" in data:
            on_timeout = self._on_timeout(data, path, out)
            if on_timeout is not None:
                out["on_timeout"], out["timeout"] = on_timeout
            else:
                out["on_timeout"] = None
        return out

    def _quorum(self, value: Any, path: Path) -> Quorum | None:
        """``approvals: {count: 2, distinct: true, from: [ops, finance]}``: how many people."""
        data = self.reader.mapping(value, path, "approvals")
        if data is None:
            return None
        self.reader.keys(data, path, _APPROVALS_KEYS, "approvals")
        if "count" not in data:
            self.reader.error(path, "approvals needs 'count': how many people must approve")
            return None
        count = self.reader.integer(data["count"], (*path, "count"), "approvals.count")
        if count is not None and not 1 <= count <= MAX_QUORUM:
            self.reader.error((*path, "count"), f"approvals.count must be 1 to {MAX_QUORUM}")
            count = None
        if "distinct" in data and data["distinct"] is not True:
            self.reader.error(
                (*path, "distinct"),
                "approvals are always from distinct people: 'distinct' can only be true",
            )
            return None
        roles: tuple[str, ...] | None = ()
        if "from" in data:
            roles = self.reader.strings(data["from"], (*path, "from"), "approvals.from")
        if count is None or roles is None:
            return None
        if len(roles) > count:
            self.reader.error(
                (*path, "from"),
                f"approvals.from names {len(roles)} roles, one person each, but count is "
                f"{count}: raise count to at least {len(roles)}",
            )
            return None
        if count == 1 and not roles:
            return None  # one person: as without the option
        return Quorum(count=count, roles=roles)

    def _escalate(self, value: Any, path: Path) -> tuple[Escalation, ...] | None:
        """``escalate: [{after: 30m, to: [security]}, {after: 2h, to: [cto]}]``."""
        if not isinstance(value, list) or not value:
            self.reader.error(path, "escalate must be a non-empty list of {after, to} steps")
            return None
        if len(value) > MAX_ESCALATIONS:
            self.reader.error(path, f"escalate has at most {MAX_ESCALATIONS} steps")
            return None
        steps: list[Escalation] = []
        for i, item in enumerate(value):
            where = (*path, i)
            data = self.reader.mapping(item, where, "an escalation step")
            if data is None:
                return None
            self.reader.keys(data, where, _ESCALATION_KEYS, "an escalation step")
            if "after" not in data or "to" not in data:
                self.reader.error(where, "an escalation step needs 'after' and 'to'")
                return None
            after = self.reader.duration(data["after"], (*where, "after"), "escalate.after")
            to = self.reader.strings(data["to"], (*where, "to"), "escalate.to")
            if after is None or to is None:
                return None
            if steps and after <= steps[-1].after:
                self.reader.error(
                    (*where, "after"), "each escalation step comes after the one before it"
                )
                return None
            steps.append(Escalation(after=after, to=to))
        return tuple(steps)

    def _on_timeout(
        self, data: dict[str, Any], path: Path, options: dict[str, Any]
    ) -> tuple[OnTimeout, float] | None:
        """``on_timeout: {after: 15m, decide: approve}`` (or ``reject``, with a ``reason``):
        what signoff decides when nobody does in time; and the time."""
        where = (*path, "on_timeout")
        found = self.reader.mapping(data["on_timeout"], where, "on_timeout")
        if found is None:
            return None
        self.reader.keys(found, where, _ON_TIMEOUT_KEYS, "on_timeout")
        if "after" not in found or "decide" not in found:
            self.reader.error(where, "on_timeout needs 'after' and 'decide' (approve or reject)")
            return None
        if "timeout" in data:
            self.reader.error(
                (*path, "timeout"),
                "give the time once: 'on_timeout.after' is the rule's timeout",
                at_key=True,
            )
            return None
        after = self.reader.duration(found["after"], (*where, "after"), "on_timeout.after")
        decide = found["decide"]
        if decide not in ("approve", "reject"):
            self.reader.error(
                (*where, "decide"), f"on_timeout.decide must be approve or reject, not {decide!r}"
            )
            return None
        reason = None
        if "reason" in found:
            if decide != "reject":
                self.reader.error(
                    (*where, "reason"), "a reason goes with decide: reject", at_key=True
                )
                return None
            reason = self.reader.string(found["reason"], (*where, "reason"), "on_timeout.reason")
        despite = False
        if "despite_approvers" in found:
            despite = bool(
                self.reader.boolean(
                    found["despite_approvers"], (*where, "despite_approvers"), "despite_approvers"
                )
            )
        guarded = [k for k in ("approvers", "forbid_self_approval", "approvals") if data.get(k)]
        if decide == "approve" and guarded:
            names = ", ".join(repr(k) for k in guarded)
            if not despite:
                self.reader.error(
                    (*where, "decide"),
                    f"this rule says who may decide ({names}): approving on timeout would "
                    "approve without them. Add 'despite_approvers: true' to mean it",
                )
                return None
            self.reader.warn(
                (*where, "despite_approvers"),
                f"calls of this rule are approved on timeout without the people its {names} "
                "require",
                at_key=True,
            )
        if after is None:
            return None
        return OnTimeout(decide=decide, reason=reason, despite_approvers=despite), after

    def _conditions(self, value: Any, path: Path) -> tuple[Condition, ...] | None:
        data = self._map(value, path)
        if data is None:
            return None
        out: list[Condition] = []
        ok = True
        for arg_path, test in data.items():
            where = (*path, arg_path)
            # A bare value is shorthand for equality: `when: {mode: fast}`.
            tests = test if isinstance(test, dict) and test else {"eq": test}
            for operator, operand in tests.items():
                at = where if tests is not test else (*where, operator)
                if operator not in OPERATORS:
                    self.reader.error(
                        at,
                        f"unknown condition {operator!r}; use one of {', '.join(OPERATORS)}",
                        at_key=True,
                    )
                    ok = False
                    continue
                try:
                    out.append(compile_condition(arg_path, str(operator), operand))
                    if operator in ("gt", "ge", "lt", "le") and _numeric_text(operand):
                        self.reader.warn(
                            at,
                            f"{operand!r} is text, so it is compared with text only; "
                            "for a number write it as one (1000, 1.0e+3)",
                        )
                except ValueError as exc:
                    self.reader.error(at, str(exc))
                    ok = False
        return tuple(out) if ok else None

    # -- helpers ---------------------------------------------------------------------------

    def _add(self, path: Path, scope: _Scope, *, effect: VerdictKind, **fields: Any) -> None:
        explicit = fields.pop("id", None)
        rule_id = explicit or format_path(path)
        if rule_id in self._ids:
            earlier, earlier_explicit = self._ids[rule_id]
            # Blame the id written by hand: a generated id only says where a rule stands.
            if explicit or not earlier_explicit:
                at, other = (*path, "id") if explicit else path, earlier
            else:
                at, other = (*earlier, "id"), path
            self.reader.error(
                at, f"rule id {rule_id!r} is already the id of the rule at {format_path(other)}"
            )
            return
        self._ids[rule_id] = (path, explicit is not None)
        if scope.kind == "server":
            assert scope.name is not None  # server scopes are always named
            fields["servers"] = (scope.name,)
        elif scope.kind == "agent":
            assert scope.name is not None  # agent scopes are always named
            fields["agents"] = (scope.name,)
            fields["tier"] = 1
        self.rules.append(
            Rule(id=rule_id, effect=effect, order=len(self.rules), named=bool(explicit), **fields)
        )

    def _map(self, value: Any, path: Path) -> dict[str, Any] | None:
        return self.reader.mapping(value, path, format_path(path) or "the policy")

    @staticmethod
    def _describe(scope: _Scope) -> str:
        return "this policy" if scope.kind == "global" else f"{scope.kind} {scope.name!r}"


def _numeric_text(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def _covered(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether a listed pattern covers `name` (itself a name or a glob)."""
    return name in patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _is_dcaf_server(value: Any) -> bool:
    return isinstance(value, dict) and bool(
        _CONNECTION_KEYS.intersection(value) or _DCAF_KEYS.intersection(value)
    )


def locate(recorded: list[Recorded], source: str | None, text: str | None) -> list[Problem]:
    locator = Locator(text) if text is not None and recorded else None
    problems = []
    for item in recorded:
        where = locator(item.path, at_key=item.at_key) if locator is not None else None
        line, column = where or (None, None)
        problems.append(
            Problem(
                message=item.message,
                path=format_path(item.path),
                source=source,
                line=line,
                column=column,
            )
        )
    return sorted(problems, key=lambda p: (p.line or 0, p.column or 0))


def _version(policy: Policy) -> str:
    normalized = {
        "default": policy.default,
        "section_defaults": [[d.id, d.kind, d.pattern, d.verdict] for d in policy.section_defaults],
        "rules": [[rule.tier, rule.to_dict()] for rule in policy.rules],
    }
    return hashlib.sha256(canonical_json(normalized)).hexdigest()[:16]
