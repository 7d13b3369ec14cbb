"""A `Policy`, and the one way it is loaded from a file, YAML or JSON text, or parsed data:
its sections become rules (`RuleBuilder`), every problem found is reported at once with its file,
line and column, and the result is versioned by the hash of what it says."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from signoff.errors import PolicyError, Problem
from signoff.policy.model import Rule, SectionDefault
from signoff.policy.reader import Recorded
from signoff.policy.sections import RuleBuilder
from signoff.policy.source import Locator, format_path, parse_text, paused_gc, read_file
from signoff.types import VerdictKind, canonical_json

__all__ = ["Policy", "load_data", "load_file", "load_text", "locate"]


@dataclass(frozen=True, kw_only=True)
class Policy:
    """A validated policy. Build one with `from_file`, `from_yaml` or `from_dict`."""

    rules: tuple[Rule, ...]
    default: VerdictKind = "ask"
    section_defaults: tuple[SectionDefault, ...] = ()
    version: str
    """A stable id: the hash of the normalized rules and defaults."""
    source: str | None = None
    warnings: tuple[Problem, ...] = ()
    """Things the loader ignored on purpose, like a toggle for a tool that is not listed."""

    @classmethod
    def from_file(cls, path: str | Path) -> Policy:
        """Load a YAML (or JSON) policy file; raise `PolicyError` with file, line and column."""
        return load_file(Path(path))

    @classmethod
    def from_yaml(cls, text: str, *, source: str | None = None) -> Policy:
        return load_text(text, source=source)

    @classmethod
    def from_dict(cls, data: Any, *, source: str | None = None) -> Policy:
        return load_data(data, source=source)


def load_file(path: Path) -> Policy:
    text, data = read_file(path, "the policy")
    return load_data(data, source=str(path), text=text)


def load_text(text: str, *, source: str | None = None) -> Policy:
    return load_data(parse_text(text, source=source), source=source, text=text)


def load_data(data: Any, *, source: str | None = None, text: str | None = None) -> Policy:
    """Validate `data` (parsed YAML or JSON) into a `Policy`, or raise `PolicyError`."""
    builder = RuleBuilder()
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
