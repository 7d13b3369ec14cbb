"""What a policy is made of: its rules and the defaults of its server and agent sections, each
with the digest a grant binds to."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, TypeAlias

from signoff.errors import InvalidArgumentsError
from signoff.policy.conditions import Condition
from signoff.types import CallKind, Escalation, OnTimeout, Quorum, VerdictKind, canonical_json

__all__ = ["Rule", "SectionDefault", "default_digest"]

SectionKind: TypeAlias = Literal["server", "agent"]


@dataclass(frozen=True, kw_only=True)
class Rule:
    """Allow, ask or deny the calls whose tool, server, agent and arguments match."""

    id: str
    """Given in the file with ``id:``, or where the rule stands, like ``rules[2]``."""
    effect: VerdictKind
    tools: tuple[str, ...]
    """Tool-name globs (or resource-URI globs, prompt-name globs: see `kind`); the rule applies
    when any matches."""
    kind: CallKind = "tool"
    """What the rule judges: tool calls, (through the MCP gateway) resource reads by URI or
    prompts got by name, or an agent's questions to people by the ask tool's name. A rule
    judges one kind only."""
    except_tools: tuple[str, ...] = ()
    """Tool-name globs the rule leaves alone even when `tools` match."""
    servers: tuple[str, ...] = ()
    """MCP-server globs; empty matches any call, with or without a server."""
    agents: tuple[str, ...] = ()
    """Agent-path globs; empty matches any agent."""
    when: tuple[Condition, ...] = ()
    """Argument conditions that must all hold."""
    priority: int = 0
    """Higher priorities are considered first."""
    timeout: float | None = None
    """Seconds an asked call waits before it expires."""
    approvers: tuple[str, ...] = ()
    forbid_self_approval: bool = False
    destructive: bool = False
    """Whether the calls it asks about cannot be undone: the web inbox asks "are you sure?"
    before approving one."""
    idempotent: bool = False
    """Whether the calls it lets through are read-only or idempotent: one that may have run
    before a crash is run again rather than shown to a person, so its claim need not wait for
    the disk (docs/guarantees.md)."""
    quorum: Quorum | None = None
    """How many people must approve a call it asks about, when more than one."""
    escalate: tuple[Escalation, ...] = ()
    on_timeout: OnTimeout | None = None
    """What signoff decides when nobody does within `timeout` (else the call expires)."""
    reason: str | None = None
    """Shown with the verdict instead of the generated explanation."""
    tier: int = 0
    """1 for rules of an ``agents:`` section: they come before global ask and allow rules."""
    order: int = 0
    """Position in the document, the last tie-breaker."""
    named: bool = False
    """Whether `id` was written in the file (else it says where the rule stands)."""

    @cached_property
    def digest(self) -> str:
        """A hash of what the rule says, not of where it stands: its id only when written in
        the file. A grant binds to it (`Verdict.rule_digest`)."""
        content = self.to_dict()
        if not self.named:
            del content["id"]
        content["tier"] = self.tier
        return _digest(["rule", content])

    def to_dict(self) -> dict[str, Any]:
        """The rule in the unified format, as it would be written in a file."""
        matched: Any = list(self.tools)
        if self.kind != "tool":
            matched = {self.kind: matched}
        out: dict[str, Any] = {"id": self.id, self.effect: matched}
        if self.except_tools:
            out["except"] = list(self.except_tools)
        if self.servers:
            out["server"] = list(self.servers)
        if self.agents:
            out["agent"] = list(self.agents)
        if self.when:
            when: dict[str, dict[str, Any]] = {}
            for condition in self.when:
                when.setdefault(condition.path, {})[condition.operator] = condition.operand
            out["when"] = when
        if self.priority:
            out["priority"] = self.priority
        if self.timeout is not None and self.on_timeout is None:
            out["timeout"] = self.timeout
        if self.approvers:
            out["approvers"] = list(self.approvers)
        if self.forbid_self_approval:
            out["forbid_self_approval"] = True
        if self.destructive:
            out["destructive"] = True
        if self.idempotent:
            out["idempotent"] = True
        if self.quorum is not None:
            out["approvals"] = {"count": self.quorum.count}
            if self.quorum.roles:
                out["approvals"]["from"] = list(self.quorum.roles)
        if self.escalate:
            out["escalate"] = [{"after": e.after, "to": list(e.to)} for e in self.escalate]
        if self.on_timeout is not None:
            on_timeout: dict[str, Any] = {"after": self.timeout, "decide": self.on_timeout.decide}
            if self.on_timeout.reason is not None:
                on_timeout["reason"] = self.on_timeout.reason
            if self.on_timeout.despite_approvers:
                on_timeout["despite_approvers"] = True
            out["on_timeout"] = on_timeout
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True, kw_only=True)
class SectionDefault:
    """The verdict for calls of one server or agent that no rule matched."""

    id: str
    kind: SectionKind
    pattern: str
    """The server-name or agent-path glob of the section."""
    verdict: VerdictKind

    @cached_property
    def digest(self) -> str:
        """A hash of what the section's default says (see `Rule.digest`)."""
        return _digest(["section", self.kind, self.pattern, self.verdict])


def default_digest(verdict: VerdictKind) -> str:
    """The `Rule.digest` of a policy's own default."""
    return _digest(["default", verdict])


def _digest(content: Any) -> str:
    try:
        data = canonical_json(content)
    except InvalidArgumentsError:  # an operand YAML read as a date: its text says it all
        data = repr(content).encode()
    return hashlib.sha256(data).hexdigest()
