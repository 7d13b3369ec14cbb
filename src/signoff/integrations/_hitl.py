"""LangChain's human-in-the-loop wire format, as LangGraph Studio and Agent Inbox speak it: the
interrupt value signoff's LangGraph integration pauses with (``HITLRequest``: ``action_requests``,
``review_configs``, and signoff's part under ``signoff``: the pause, the approvals and the version
of each), and the resume payloads it accepts (``{"decisions": [...]}`` in the interrupt's order,
or ``{approval id: decision}``; each decision may name the ``version`` it was made on), checked
before anything is taken."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, Union

from annotated_types import Len
from pydantic import (
    Discriminator,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StringConstraints,
    TypeAdapter,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema
from typing_extensions import TypedDict

from signoff.errors import InvalidDecisionError
from signoff.gate import transcript
from signoff.gate.external import ExternalRuns
from signoff.gate.versions import version_of
from signoff.limits import ArgumentLimits
from signoff.types import Approval, Approve, Decision, Edit, Reject, Respond

__all__ = [
    "MARK",
    "Sent",
    "interrupt_value",
    "response_schema",
    "resume_decisions",
    "take_sent",
    "transcript_of",
]

MARK = "signoff"
"""The key of signoff's part in an interrupt's value, and of the resumer's resume value."""
_DECISIONS = ("approve", "edit", "reject", "respond")
_LIMITS = ArgumentLimits()


def interrupt_value(pause_id: str, approvals: Sequence[Approval]) -> dict[str, Any]:
    return {
        "action_requests": [
            {
                "name": a.call.name,
                "args": a.call.args,
                "description": f"{a.reason} (signoff approval {a.id})",
            }
            for a in approvals
        ],
        "review_configs": [
            {"action_name": a.call.name, "allowed_decisions": list(_DECISIONS)} for a in approvals
        ],
        # The version of each call as shown here: a client sends it back with its decision,
        # which is refused if the call changed since (edited, approved by another, ...).
        MARK: {
            "pause": pause_id,
            "approvals": [a.id for a in approvals],
            "versions": {a.id: a.version for a in approvals},
        },
    }


# ``version`` is signoff's, beside LangChain's keys: the version of the call the decision was
# made on (the interrupt's ``signoff.versions``). Declared, so that LangGraph's check of the
# payload keeps it.
_Version = Annotated[int, Field(ge=1, strict=True)]


class _Approve(TypedDict):
    type: Literal["approve"]
    version: NotRequired[_Version]


class _Action(TypedDict):
    name: NotRequired[str]
    args: dict[str, Any]


class _Edit(TypedDict):
    type: Literal["edit"]
    edited_action: _Action
    version: NotRequired[_Version]


class _Reject(TypedDict):
    type: Literal["reject"]
    message: NotRequired[str]
    version: NotRequired[_Version]


class _Respond(TypedDict):
    type: Literal["respond"]
    message: Annotated[str, StringConstraints(min_length=1)]
    version: NotRequired[_Version]


_OneDecision = Annotated[Union[_Approve, _Edit, _Reject, _Respond], Discriminator("type")]  # noqa: UP007


class _Ours(TypedDict):
    signoff: dict[str, Any]


@functools.lru_cache(maxsize=64)
def response_schema(count: int) -> type:
    """What a resume of an interrupt asking `count` calls may carry: LangGraph checks it before
    saving it, so a malformed payload is refused and the interrupt can be answered again.

    A type made once per count that validates with an adapter made once, and shows a JSON
    schema made once: LangGraph builds a `TypeAdapter` of it, and its JSON schema, at every
    interrupt and resume — of the union itself, milliseconds each time."""

    Decisions = TypedDict(  # noqa: UP013 (built per count)
        "Decisions", {"decisions": Annotated[list[_OneDecision], Len(count, count)]}
    )
    shape = Union[_Ours, Decisions, dict[str, _OneDecision]]  # noqa: UP007
    adapter = TypeAdapter(shape)
    shown = _inlined(adapter.json_schema())

    class Response:
        @classmethod
        def __get_pydantic_core_schema__(
            cls, source: Any, handler: GetCoreSchemaHandler
        ) -> CoreSchema:
            return core_schema.no_info_plain_validator_function(adapter.validate_python)

        @classmethod
        def __get_pydantic_json_schema__(
            cls, schema: CoreSchema, handler: GetJsonSchemaHandler
        ) -> JsonSchemaValue:
            return copy.deepcopy(shown)

    return Response


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each ``$ref`` to its ``$defs`` replaced by the definition (none refers to
    itself), and no discriminator mapping naming them: whole on its own, wherever a JSON schema
    generator puts it."""
    defs = schema.get("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            inlined = {k: inline(v) for k, v in node.items() if k != "$defs"}
            if isinstance(inlined.get("discriminator"), dict):  # its mapping names the $defs
                inlined["discriminator"].pop("mapping", None)
            return inlined
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    inlined: dict[str, Any] = inline(schema)
    return inlined


@dataclass(frozen=True, kw_only=True)
class Sent:
    """What a resume payload carries."""

    decisions: dict[str, Decision] = field(default_factory=dict)
    """Its decisions, by approval id."""
    versions: dict[str, int] = field(default_factory=dict)
    """The version of its call each decision was made on, where it names one."""


def resume_decisions(value: Any, approvals: Sequence[Approval]) -> Sent:
    """The decisions a resume payload carries (none for signoff's own), with the versions they
    name. Raises `InvalidDecisionError` naming the field that is wrong."""
    if isinstance(value, Mapping) and MARK in value:
        return Sent()
    if isinstance(value, Mapping) and "decisions" in value:
        listed = value["decisions"]
        if not isinstance(listed, list):
            raise InvalidDecisionError("resume: 'decisions' is a list, one per held call")
        if len(listed) != len(approvals):
            raise InvalidDecisionError(
                f"resume: 'decisions' has {len(listed)} item(s) for {len(approvals)} held call(s)"
            )
        pairs = [(a, d, f"decisions[{i}]")
                 for i, (a, d) in enumerate(zip(approvals, listed, strict=True))]  # fmt: skip
    elif isinstance(value, Mapping):
        ids = {a.id: a for a in approvals}
        unknown_ids = [k for k in value if k not in ids]
        if unknown_ids:
            raise InvalidDecisionError(f"resume: {unknown_ids[0]!r} is not a held call's approval")
        pairs = [(ids[k], d, repr(k)) for k, d in value.items()]
    else:
        raise InvalidDecisionError(
            "resume: send {'decisions': [...]} (one per held call, in order) or decide in signoff"
        )
    decisions = {a.id: _decision(d, where, a) for a, d, where in pairs}
    versions = {a.id: _version(d["version"], where) for a, d, where in pairs
                if d.get("version") is not None}  # fmt: skip
    return Sent(decisions=decisions, versions=versions)


async def take_sent(
    runs: ExternalRuns, sent: Sequence[tuple[Any, Any, Any]], approvals: Sequence[Approval]
) -> None:
    """Take the decisions a framework's events carry — each (approval id, one decision in this
    module's shape, who sent it) — as their senders' (`ExternalRuns.decide`: the policy's
    approvers, self-approval, the version each names; a sender named by no text is nobody).
    None is taken unless each is well formed and names another of `approvals`
    (`InvalidDecisionError`, naming what is wrong)."""
    named = [a for a, _, _ in sent]
    if not all(isinstance(a, str) for a in named) or len(set(named)) < len(named):
        raise InvalidDecisionError("resume: one decision per held call, each naming its approval")
    taken = [(resume_decisions({a: d}, approvals), by) for a, d, by in sent]
    for decided, by in taken:
        actor = by if isinstance(by, str) and by.strip() else None
        await runs.decide(decided.decisions, actor=actor, versions=decided.versions)


def _version(value: Any, where: str) -> int:
    version = version_of(value)
    if version is None:
        raise InvalidDecisionError(
            f"resume: {where}.version is the version of the call the decision was made on (a "
            f"whole number from 1, as the interrupt's signoff.versions gives it), not "
            f"{repr(value)[:40]}"
        )
    return version


def _decision(data: Any, where: str, approval: Approval) -> Decision:
    if not isinstance(data, Mapping):
        raise InvalidDecisionError(f"resume: {where} is an object with a 'type'")
    problem = _LIMITS.problem(dict(data))
    if problem is not None:
        raise InvalidDecisionError(f"resume: {where}: {problem}")
    kind = data.get("type")
    if kind == "approve":
        return Approve()
    if kind == "edit":
        action = data.get("edited_action")
        args = action.get("args") if isinstance(action, Mapping) else None
        if not isinstance(args, dict):
            raise InvalidDecisionError(f"resume: {where}.edited_action.args is an object")
        name = action.get("name", approval.call.name) if isinstance(action, Mapping) else None
        if name != approval.call.name:
            raise InvalidDecisionError(
                f"resume: {where}.edited_action.name: an edit keeps the tool "
                f"({approval.call.name!r}), not {name!r}"
            )
        return Edit(args=args)
    if kind == "respond":
        message = data.get("message")
        if not isinstance(message, str) or not message.strip():
            raise InvalidDecisionError(f"resume: {where}.message is the response's text")
        return Respond(content=message)
    if kind == "reject":
        message = data.get("message", "")
        if not isinstance(message, str):
            raise InvalidDecisionError(f"resume: {where}.message is text")
        return Reject(reason=message)
    raise InvalidDecisionError(f"resume: {where}.type is one of {list(_DECISIONS)}, not {kind!r}")


_ROLES: dict[str, transcript.Role] = {
    "human": "user",
    "ai": "assistant",
    "tool": "tool",
    "system": "system",
}


def transcript_of(messages: Sequence[Any], agent: str | None) -> list[dict[str, Any]]:
    """LangChain's messages (a graph's ``messages``) as `transcript` messages; the model's are
    `agent`'s, or those of the agent its name says (a supervisor's sub-agent)."""
    found = []
    for item in transcript.tail(messages):
        role = _ROLES.get(getattr(item, "type", ""))
        if role is None:
            continue
        calls = [
            transcript.call(c.get("id"), c.get("name", ""), c.get("args"))
            for c in getattr(item, "tool_calls", None) or ()
        ]
        found.append(
            transcript.message(
                role,
                getattr(item, "content", ""),
                tool_calls=calls,
                tool_call_id=getattr(item, "tool_call_id", None),
                name=getattr(item, "name", None) if role == "tool" else None,
                agent=(getattr(item, "name", None) or agent) if role == "assistant" else None,
                is_error=getattr(item, "status", None) == "error",
            )
        )
    return found
