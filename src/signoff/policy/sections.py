"""How a policy document becomes rules: the unified format, and every seed's format as sugar
for it, section by section.

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
from dataclasses import dataclass
from typing import Any, Literal, get_args

from signoff.policy.model import Rule, SectionDefault
from signoff.policy.options import RULE_OPTIONS, read_conditions, read_options
from signoff.policy.reader import Reader
from signoff.policy.reader import show as _show
from signoff.policy.source import Path, format_path
from signoff.types import CallKind, VerdictKind

__all__ = ["OTHER_TOP_KEYS", "RuleBuilder"]

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
    | {"retention", "metrics", "runs", "hooks"}
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
_NAMED = {"server": ("a server name", _SERVER_KEYS), "agent": ("an agent path", _SECTION_KEYS)}
"""For the sections under ``servers:`` and ``agents:``: what their names are, and their keys."""
_KAGENT_BLOCK_KEYS = frozenset(
    {"name", "kind", "apiGroup", "toolNames", "requireApproval", "allowedHeaders"}
)
_RULE_KEYS = frozenset({"allow", "ask", "deny", "id", "except", "server", "agent", "when"})
_CALL_KINDS: tuple[CallKind, ...] = get_args(CallKind)
_RULE_KEYS |= RULE_OPTIONS
_TOGGLE_KEYS = frozenset({"require_approval", "verdict"}) | RULE_OPTIONS


@dataclass(frozen=True)
class _Scope:
    """Where a section's rules apply: everywhere, to one server, or to one agent path."""

    kind: Literal["global", "server", "agent"]
    name: str | None = None


class RuleBuilder:
    """Reads a policy document, section by section, into rules and defaults; what is wrong
    is recorded in `reader`."""

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
            self._named("server", top, ())
        else:
            self.reader.keys(top, (), _TOP_KEYS, "the policy")
            version = top.get("version", 1)
            if type(version) is not int or version != 1:
                self.reader.error(("version",), f"unsupported version {version!r}; use 1")
            self._section(top, (), _Scope("global"))

    def _named(
        self, kind: Literal["server", "agent"], sections: dict[str, Any], path: Path
    ) -> None:
        """The sections of the servers or agents, each under its name (a glob)."""
        what, allowed = _NAMED[kind]
        for name, section in sections.items():
            where = (*path, name)
            if self.reader.globs(name, where, what) and (body := self._map(section, where)):
                self.reader.keys(body, where, allowed, f"{kind} {name!r}")
                self._section(body, where, _Scope(kind, name))
                if kind == "server" and _CONNECTION_KEYS.intersection(body):
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
                self._named("server", servers, where)
            elif scope.kind == "global" and key == "agents" and (agents := self._map(value, where)):
                self._named("agent", agents, where)
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
            fields["when"] = read_conditions(self.reader, data["when"], (*path, "when"))
        if "id" in data:
            fields["id"] = self.reader.string(data["id"], (*path, "id"), "id")
        fields |= read_options(self.reader, data, path, effect)
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
                "name what the rule judges with one of tool, resource, prompt or question "
                f"(found {', '.join(others or kinds) or 'nothing'})",
            )
            return None
        kind = kinds[0]
        what = {"tool": "tool patterns", "resource": "resource URI patterns",
                "prompt": "prompt patterns", "question": "ask tool patterns"}[kind]  # fmt: skip
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
            fields = read_options(self.reader, data, path, effect)
        if effect is not None and None not in fields.values():
            self._add(path, scope, effect=effect, tools=(name,), **fields)

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


def _covered(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether a listed pattern covers `name` (itself a name or a glob)."""
    return name in patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _is_dcaf_server(value: Any) -> bool:
    return isinstance(value, dict) and bool(
        _CONNECTION_KEYS.intersection(value) or _DCAF_KEYS.intersection(value)
    )
