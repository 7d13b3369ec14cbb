"""The compiled policy: from a tool call to a verdict in microseconds, at any number of rules.

Rules are sorted once into precedence order (higher priority first; then deny; then rules of an
agent's own section; then ask before allow; then document order), so the first rule that matches
a call decides it. Which rules can match a tool name is found through indexes (exact names in a
dict, literal prefixes, suffixes and infixes looked up by slicing the name, and only the remaining
complex globs tried one by one) and cached per ``(tool, server, agent)``. Resources and prompts
(the MCP gateway's reads and gets) have indexes of their own: a tool rule never matches them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar, get_args

from signoff.errors import InvalidArgumentsError
from signoff.limits import ArgumentLimits
from signoff.names import same_person
from signoff.policy import shell
from signoff.policy.conditions import Condition, NotJSONError, is_json
from signoff.policy.glob import Glob, compile_glob
from signoff.policy.loader import Policy
from signoff.policy.model import Rule, SectionDefault, default_digest
from signoff.policy.source import paused_gc
from signoff.types import CallKind, Context, Grant, ToolCall, Verdict, VerdictKind, grant_to_dict
from signoff.types.fields import same_named

__all__ = ["GRANTED", "Explanation", "PolicyEngine"]

GRANTED = "grant:"
"""How a verdict's rule names the grant that let a call through: ``grant:<id>``."""

_EFFECT_RANK = {"deny": 0, "ask": 1, "allow": 2}
_Key = tuple[str, str | None, str | None, CallKind]
T = TypeVar("T")
_Lookup = tuple[tuple["_Entry", ...], Verdict]
"""A cache entry: the candidate rules in precedence order, and the default."""
_SCOPE_WORDS = {"run": "this run", "thread": "this thread", "agent": "this agent", "global": "all"}


@dataclass(frozen=True, kw_only=True)
class Explanation:
    """Why a call gets its verdict."""

    verdict: Verdict
    rule: Rule | None
    """The rule that decided, or None when a default or a grant did."""
    shadowed: tuple[Rule, ...]
    """Rules that also match the call but lost to `rule` by precedence."""
    grant: Grant | None = None
    """The grant that let an asked call through, if one did."""
    passed_over: tuple[tuple[Grant, str], ...] = ()
    """The other grants of the context for the call's tool, each with why it does not cover
    the call."""

    def grants_json(self) -> dict[str, Any]:
        """``grant`` (the one that let the call through, or null) and ``grants_passed_over``
        (each other one, with ``why`` not), as JSON-ready data."""
        return {
            "grant": None if self.grant is None else grant_to_dict(self.grant),
            "grants_passed_over": [
                {"id": g.id, "granted_by": g.created_by, "scope": g.scope, "why": why}
                for g, why in self.passed_over
            ],
        }


@dataclass(frozen=True, slots=True)
class _Entry:
    rule: Rule
    when: tuple[Condition, ...]
    verdict: Verdict
    excepts: tuple[Glob, ...]
    servers: tuple[Glob, ...]
    agents: tuple[Glob, ...]

    def applies(self, args: dict[str, object]) -> bool:
        return all(condition.holds(args) for condition in self.when)


class PolicyEngine:
    """Evaluates tool calls against one policy version. Build a new engine for a new policy."""

    def __init__(self, policy: Policy, *, cache_size: int = 65_536) -> None:
        self.policy = policy
        self._cache_size = cache_size
        self._cache: dict[_Key, _Lookup] = {}
        ordered = sorted(
            policy.rules,
            key=lambda r: (
                -r.priority,
                r.effect != "deny",
                -r.tier,
                _EFFECT_RANK[r.effect],
                r.order,
            ),
        )
        self._ordered = ordered
        # Entries are built on first use: a lookup touches only the rules its name can match.
        self._entries: dict[int, _Entry] = {}
        self._rules = {rule.id: rule for rule in policy.rules}
        self._digests: frozenset[str] | None = None
        with paused_gc():
            self._indexes = {
                kind: _NameIndex(
                    (i, compile_glob(p))
                    for i, rule in enumerate(ordered)
                    if rule.kind == kind
                    for p in rule.tools
                )
                for kind in get_args(CallKind)
            }
        # Defaults: an agent's own section first, exact paths before globs; then the server's.
        self._defaults = sorted(
            policy.section_defaults,
            key=lambda d: (d.kind != "agent", compile_glob(d.pattern).shape != "exact"),
        )
        self._default_globs = [compile_glob(d.pattern) for d in self._defaults]

    @property
    def version(self) -> str:
        return self.policy.version

    def rule(self, rule_id: str) -> Rule:
        """The rule with this id; raise KeyError if there is none."""
        return self._rules[rule_id]

    def evaluate(self, call: ToolCall, context: Context | None = None) -> Verdict:
        """The verdict for `call`: allow, ask or deny, and the rule that decided. A shell
        tool's command is judged part by part (`signoff.policy.shell`)."""
        command = shell.command_of(call)
        if command is None:
            return self._evaluate(call, context)
        verdict = shell.judge(call, command, lambda part: self._evaluate(part, context))
        if verdict.kind == "ask" and context is not None and context.grants:
            # Only a grant for this very command covers it whole; one for any arguments
            # covers each part it was left for, judged above.
            digest = shell.digest(call)
            exact = tuple(g for g in context.grants if digest and g.args_digest == digest)
            candidates, _ = self._lookup((call.name, call.server, call.agent, call.kind))
            grant = _covering_grant(call, replace(context, grants=exact), candidates, verdict)
            if grant is not None:
                return _granted(grant)
        return verdict

    def _evaluate(self, call: ToolCall, context: Context | None) -> Verdict:
        """The verdict for `call` as the rules and grants say, its arguments read as data."""
        key = (call.name, call.server, call.agent, call.kind)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._lookup(key)
        candidates, default = cached
        args: object = call.args  # typed as a dict, but a model can put anything there
        if not isinstance(args, dict):
            return _fail_closed(candidates, default)
        verdict = default
        try:
            for entry in candidates:
                if not entry.when or entry.applies(args):
                    verdict = entry.verdict
                    break
        except NotJSONError:
            return _fail_closed(candidates, default)
        if verdict.kind == "ask" and context is not None and context.grants:
            grant = _covering_grant(call, context, candidates, verdict)
            if grant is not None:
                return _granted(grant)
        return verdict

    def knows(self, rule_digest: str | None) -> bool:
        """Whether a rule (or default) of this policy says what `rule_digest` hashes: a grant
        bound to anything else covers nothing any more."""
        if rule_digest is None:
            return False
        if self._digests is None:
            self._digests = frozenset(
                [r.digest for r in self.policy.rules]
                + [d.digest for d in self.policy.section_defaults]
                + [default_digest(self.policy.default)]
            )
        return rule_digest in self._digests

    def approvers(self, rule_digest: str | None) -> tuple[str, ...] | None:
        """The roles a decider needs (empty: anyone who may decide) under the rule or default
        of this policy that says what `rule_digest` hashes; None when none does."""
        if not self.knows(rule_digest):
            return None
        found = next((r for r in self.policy.rules if r.digest == rule_digest), None)
        return () if found is None else found.approvers  # a default names no approvers

    def grant_problem(self, grant: Grant, call: ToolCall, context: Context) -> str | None:
        """Why `grant` does not let `call` through in `context`, in words; None when it does.
        Says the same as `evaluate` decides."""
        key = (call.name, call.server, call.agent, call.kind)
        candidates, _ = self._cache.get(key) or self._lookup(key)
        asked = self.evaluate(call, replace(context, grants=()))
        if asked.kind != "ask":
            return f"the call is not asked about: the policy says {asked.kind}"
        return _grant_problem(grant, call, context, candidates, asked)

    def fixed_kind(
        self,
        name: str,
        *,
        server: str | None = None,
        agent: str | None = None,
        kind: CallKind = "tool",
    ) -> VerdictKind | None:
        """Allow, ask or deny when every call of this tool (or read of this resource, get of
        this prompt) gets it whatever its arguments; None when the arguments decide (a rule's
        `when`). Grants aside: they only turn an ask into an allow. What the MCP gateway hides
        tools, resources and prompts by (those always denied)."""
        key = (name, server, agent, kind)
        candidates, default = self._cache.get(key) or self._lookup(key)
        conditional: set[str] = set()
        for entry in candidates:
            if entry.when:
                conditional.add(entry.verdict.kind)
                continue
            return entry.verdict.kind if conditional <= {entry.verdict.kind} else None
        return default.kind if conditional <= {default.kind} else None

    def explain(
        self,
        call: ToolCall,
        context: Context | None = None,
        *,
        limits: ArgumentLimits | None = None,
    ) -> Explanation:
        """The verdict (the same as `evaluate`), the deciding rule and the rules it shadowed.
        With `limits`, as the gate judges: arguments past them are blocked before any rule."""
        problem = None if limits is None else limits.problem(call.args)
        if problem is not None:
            return Explanation(
                verdict=Verdict(kind="deny", rule=None, reason=problem), rule=None, shadowed=()
            )
        verdict = self.evaluate(call, context)
        candidates, _ = self._lookup((call.name, call.server, call.agent, call.kind))
        args: object = call.args
        checkable = isinstance(args, dict) and is_json(args)
        matched = [e.rule for e in candidates if checkable and e.applies(args)]  # type: ignore[arg-type]
        grant = None
        passed_over: list[tuple[Grant, str]] = []
        if context is not None:
            for candidate in context.grants:
                if verdict.rule == f"{GRANTED}{candidate.id}":
                    grant = candidate
                elif (candidate.tool, candidate.server, candidate.kind) == (
                    call.name,
                    call.server,
                    call.kind,
                ):
                    why = self.grant_problem(candidate, call, context)
                    passed_over.append((candidate, why or "another grant applies first"))
        rule = self._rules.get(verdict.rule) if verdict.rule else None
        return Explanation(
            verdict=verdict,
            rule=rule,
            shadowed=tuple(r for r in matched if r is not rule),
            grant=grant,
            passed_over=tuple(passed_over),
        )

    def _lookup(self, key: _Key) -> _Lookup:
        name, server, agent, kind = key
        candidates = tuple(
            entry
            for entry in map(self._entry, sorted(self._indexes[kind].lookup(name)))
            if not _any_match(entry.excepts, name)
            and (not entry.servers or (server is not None and _any_match(entry.servers, server)))
            and (not entry.agents or (agent is not None and _any_match(entry.agents, agent)))
        )
        found = (candidates, self._default_for(server, agent))
        if len(self._cache) >= self._cache_size:
            self._cache.clear()
        self._cache[key] = found
        return found

    def _entry(self, index: int) -> _Entry:
        entry = self._entries.get(index)
        if entry is None:
            entry = self._entries[index] = _entry(self._ordered[index])
        return entry

    def _default_for(self, server: str | None, agent: str | None) -> Verdict:
        for section, glob in zip(self._defaults, self._default_globs, strict=True):
            subject = agent if section.kind == "agent" else server
            if subject is not None and glob.matches(subject):
                return _section_default(section)
        return Verdict(
            kind=self.policy.default,
            rule=None,
            reason=f"no rule matched; the policy's default is {self.policy.default}",
            rule_digest=default_digest(self.policy.default),
        )


class _NameIndex:
    """Which rules have a tool pattern matching a name, without trying every pattern."""

    def __init__(self, globs: Iterable[tuple[int, Glob]]) -> None:
        self._any: list[int] = []
        self._exact: dict[str, list[int]] = defaultdict(list)
        self._by_shape: dict[str, dict[str, list[int]]] = {
            s: defaultdict(list) for s in ("prefix", "suffix", "infix")
        }
        self._complex: dict[str, dict[str, list[tuple[int, Glob]]]] = {
            s: defaultdict(list) for s in ("prefix", "suffix", "infix")
        }
        self._complex_unkeyed: list[tuple[int, Glob]] = []
        for i, glob in globs:
            if glob.shape == "any":
                self._any.append(i)
            elif glob.shape == "exact":
                self._exact[glob.key].append(i)
            elif glob.shape != "complex":
                self._by_shape[glob.shape][glob.key].append(i)
            elif glob.key_side == "none":
                self._complex_unkeyed.append((i, glob))
            else:
                self._complex[glob.key_side][glob.key].append((i, glob))
        self._lengths = {
            **{s: sorted({len(k) for k in keys}) for s, keys in self._by_shape.items()},
            **{f"complex_{s}": sorted({len(k) for k in keys}) for s, keys in self._complex.items()},
        }

    def lookup(self, name: str) -> set[int]:
        hits = set(self._any)
        hits.update(self._exact.get(name, ()))
        for shape, keys in self._by_shape.items():
            for ids in _slices(name, shape, keys, self._lengths[shape]):
                hits.update(ids)
        for shape, keyed in self._complex.items():
            for globs in _slices(name, shape, keyed, self._lengths[f"complex_{shape}"]):
                hits.update(i for i, glob in globs if i not in hits and glob.matches(name))
        hits.update(i for i, glob in self._complex_unkeyed if i not in hits and glob.matches(name))
        return hits


def _slices(
    name: str, side: str, index: dict[str, list[T]], lengths: list[int]
) -> Iterator[list[T]]:
    """The entries of `index` keyed by a slice of `name` at `side`, for each key length."""
    size = len(name)
    for k in lengths:
        if k > size:
            break
        if side == "prefix":
            found = index.get(name[:k])
            if found:
                yield found
        elif side == "suffix":
            found = index.get(name[size - k :])
            if found:
                yield found
        else:
            for start in range(size - k + 1):
                found = index.get(name[start : start + k])
                if found:
                    yield found


def _entry(rule: Rule) -> _Entry:
    lead = {"deny": "denied", "ask": "approval required", "allow": "allowed"}[rule.effect]
    verdict = Verdict(
        kind=rule.effect,
        rule=rule.id,
        reason=rule.reason or f"{lead}: {_describe(rule)}",
        rule_digest=rule.digest,
        **same_named(rule, ("timeout", "approvers", "forbid_self_approval", "destructive")),
        **same_named(rule, ("quorum", "escalate", "on_timeout", "idempotent")),
    )
    return _Entry(
        rule=rule,
        when=rule.when,
        verdict=verdict,
        excepts=tuple(compile_glob(p) for p in rule.except_tools),
        servers=tuple(compile_glob(p) for p in rule.servers),
        agents=tuple(compile_glob(p) for p in rule.agents),
    )


def _describe(rule: Rule) -> str:
    """``write_file when path glob '/etc/**'``: what a rule matches, in a few words."""
    shown = ("" if rule.kind == "tool" else f"{rule.kind} ") + ", ".join(rule.tools[:3])
    shown += f" (+{len(rule.tools) - 3} more)" if len(rule.tools) > 3 else ""
    if rule.except_tools:
        shown += f" except {', '.join(rule.except_tools[:3])}"
    if rule.servers:
        shown += f" on {', '.join(rule.servers)}"
    if rule.agents:
        shown += f" from {', '.join(rule.agents)}"
    if rule.when:
        shown += " when " + " and ".join(f"{c.path} {c.operator} {c.operand!r}" for c in rule.when)
    return shown


def _any_match(globs: Sequence[Glob], name: str) -> bool:
    return any(glob.matches(name) for glob in globs)


def _section_default(section: SectionDefault) -> Verdict:
    return Verdict(
        kind=section.verdict,
        rule=section.id,
        reason=f"no rule matched; {section.kind} {section.pattern!r} defaults to {section.verdict}",
        rule_digest=section.digest,
    )


def _fail_closed(candidates: Sequence[_Entry], default: Verdict) -> Verdict:
    """Arguments that are not a JSON object (or hold NaN, dates, objects where a condition must
    read them) cannot be checked: deny if any rule might apply, else ask."""
    for entry in candidates:
        if entry.rule.effect == "deny":
            reason = f"the arguments are not a JSON object and rule {entry.rule.id} may deny it"
            return Verdict(kind="deny", rule=entry.rule.id, reason=reason)
    if default.kind == "deny":
        return default
    return Verdict(
        kind="ask", rule=None, reason="the arguments are not a JSON object, so a person decides"
    )


def _covering_grant(
    call: ToolCall, context: Context, candidates: Sequence[_Entry], asked: Verdict
) -> Grant | None:
    """The first grant that lets the asked `call` through (see `_grant_problem`)."""
    return next(
        (g for g in context.grants if _grant_problem(g, call, context, candidates, asked) is None),
        None,
    )


def _grant_problem(
    grant: Grant, call: ToolCall, context: Context, candidates: Sequence[_Entry], asked: Verdict
) -> str | None:
    """Why `grant` does not let the asked `call` through, or None when it does: it was left
    under the very rule that asks now (what the rule says, and its id when the file names it: a
    generated id only says where the rule stands, which a new rule shifts); it covers the call
    and its scope; its granter could have approved the call (the rule's approvers,
    self-approval; a rule that needs several people is never met by a grant); and no deny rule
    matches the call — grants never beat a deny. Arguments
    that cannot be checked (not JSON) are never covered: the call keeps asking."""
    if (grant.tool, grant.server, grant.kind) != (call.name, call.server, call.kind):
        return f"it is for another {call.kind}"
    if grant.agent != call.agent:
        return f"it is for the {call.kind} of {_whose(grant.agent)}, not of {_whose(call.agent)}"
    if grant.rule_digest is None:
        return "it was granted before grants were bound to their rule"
    if grant.rule_digest != asked.rule_digest:
        if grant.rule == asked.rule:
            return f"rule {grant.rule or 'default'} changed since it was granted"
        asking = asked.rule or "the policy's default"
        return f"it was granted under {grant.rule or 'the default'}, and {asking} asks now"
    if asked.quorum is not None:
        return f"the rule needs {asked.quorum.count} people to approve, and a grant is one's"
    if asked.approvers and not set(grant.roles) & set(asked.approvers):
        return (
            f"{grant.created_by!r} has none of the roles {list(asked.approvers)!r} the rule needs"
        )
    if asked.forbid_self_approval and same_person(grant.created_by, context.requested_by):
        return f"{grant.created_by!r} asked for the call and the rule forbids self-approval"
    try:
        if not grant.covers(call, context):
            if grant.args_digest is not None and grant.args_digest != call.digest:
                return "it is for other arguments"
            if grant.scope in ("run", "thread") and (
                not same_person(grant.requested_by, context.requested_by)
            ):
                return (
                    f"it covers only calls {grant.requested_by!r} requests in its "
                    f"{grant.scope}, and {context.requested_by!r} requested this one"
                )
            return f"the call is outside its scope ({grant.scope} {grant.subject!r})"
        if any(e.rule.effect == "deny" and e.applies(call.args) for e in candidates):
            return "a deny rule matches the call"
    except (NotJSONError, InvalidArgumentsError):
        return "the arguments cannot be checked"
    return None


def _whose(agent: str | None) -> str:
    return "no agent" if agent is None else f"agent {agent!r}"


def _granted(grant: Grant) -> Verdict:
    return Verdict(
        kind="allow",
        rule=f"{GRANTED}{grant.id}",
        reason=f"approved always by {grant.created_by} for {_SCOPE_WORDS[grant.scope]}",
    )
