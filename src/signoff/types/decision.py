"""The decisions a held call can get — approve (once or always, within a scope), edit,
respond, reject, answer (a question), and the system's expired and cancelled — and their JSON
form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "Answer",
    "Approve",
    "Cancelled",
    "Decision",
    "Edit",
    "Expired",
    "Reject",
    "Respond",
    "Scope",
    "ScopeKind",
    "decision_from_dict",
    "decision_to_dict",
]

ScopeKind: TypeAlias = Literal["run", "thread", "agent", "global"]


@dataclass(frozen=True, kw_only=True)
class Scope:
    """How far an "approve always" reaches."""

    kind: ScopeKind
    """``run``, ``thread``, ``agent`` (the calling agent's path) or ``global``."""
    with_args: bool = True
    """Cover only calls with exactly the approved arguments (the default). False widens the
    grant to the tool's calls with any arguments: a choice to make on purpose."""


@dataclass(frozen=True, kw_only=True)
class Approve:
    """Run the call as proposed, once, or always within a scope."""

    kind: Literal["approve"] = field(default="approve", init=False)
    always: Scope | None = None
    """When set, later calls of the same agent's tool within the scope run without asking —
    with the same arguments unless the scope widens it to any (never past a deny)."""


@dataclass(frozen=True, kw_only=True)
class Edit:
    """Run the call with these arguments instead."""

    kind: Literal["edit"] = field(default="edit", init=False)
    args: dict[str, Any]
    """The replacement arguments, validated against the tool's schema and re-checked by policy."""


@dataclass(frozen=True, kw_only=True)
class Respond:
    """Do not run the call; give the agent this text as its result."""

    kind: Literal["respond"] = field(default="respond", init=False)
    content: str
    """The tool result the model will see."""


@dataclass(frozen=True, kw_only=True)
class Reject:
    """Do not run the call; tell the agent why and not to retry."""

    kind: Literal["reject"] = field(default="reject", init=False)
    reason: str = ""
    """Shown to the model in the rejection result and kept in the audit log."""


@dataclass(frozen=True, kw_only=True)
class Answer:
    """A person's answer to a question an agent asked (`signoff.gate.questions`): it becomes
    the ask tool's result."""

    kind: Literal["answer"] = field(default="answer", init=False)
    value: Any
    """The answer: text, a choice, the choices, or a form's fields — as the question's schema
    says."""


@dataclass(frozen=True, kw_only=True)
class Expired:
    """The approval's timeout passed before anyone decided; the call never runs."""

    kind: Literal["expired"] = field(default="expired", init=False)


@dataclass(frozen=True, kw_only=True)
class Cancelled:
    """The run was cancelled while the call waited; the call never runs."""

    kind: Literal["cancelled"] = field(default="cancelled", init=False)
    reason: str = ""


Decision: TypeAlias = Approve | Edit | Respond | Reject | Answer | Expired | Cancelled


def decision_to_dict(decision: Decision) -> dict[str, Any]:
    """The decision as JSON-ready data, tagged by ``kind``."""
    match decision:
        case Approve(always=None):
            return {"kind": "approve"}
        case Approve(always=scope):
            assert scope is not None  # matched by the case above otherwise
            return {
                "kind": "approve",
                "always": {"scope": scope.kind, "with_args": scope.with_args},
            }
        case Edit(args=args):
            return {"kind": "edit", "args": args}
        case Respond(content=content):
            return {"kind": "respond", "content": content}
        case Reject(reason=reason):
            return {"kind": "reject", "reason": reason}
        case Answer(value=value):
            return {"kind": "answer", "value": value}
        case Expired():
            return {"kind": "expired"}
        case Cancelled(reason=reason):
            return {"kind": "cancelled", "reason": reason}


def decision_from_dict(data: dict[str, Any]) -> Decision:
    """The inverse of `decision_to_dict`, for data this package stored itself."""
    match data["kind"]:
        case "approve":
            always = data.get("always")
            scope = (
                None
                if always is None
                else Scope(kind=always["scope"], with_args=always["with_args"])
            )
            return Approve(always=scope)
        case "edit":
            return Edit(args=data["args"])
        case "respond":
            return Respond(content=data["content"])
        case "reject":
            return Reject(reason=data["reason"])
        case "answer":
            return Answer(value=data["value"])
        case "expired":
            return Expired()
        case "cancelled":
            return Cancelled(reason=data["reason"])
    raise ValueError(f"unknown decision kind {data['kind']!r}")
