"""An agent asking a person: a question is a held call of kind ``question`` — its arguments are
the question — so it is stored, listed, audited, delegated, timed out and resumed as an approval
is. What differs lives here: what a question may say, the schema its answer must fit, that it
always waits for a person, who it is handed to at once, which decisions it takes (an answer, or a
rejection that declines it) and the one tool result its outcome becomes.

    {"question": "Which region?", "choices": ["eu", "us"], "to": "bob", "timeout": "30m",
     "default": "eu"}
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from signoff.errors import InvalidDecisionError
from signoff.gate.deciders import assignee
from signoff.gate.forms import FormError, check_answer, check_form, with_order
from signoff.policy.reader import Reader
from signoff.types import (
    AUTOMATIC,
    Answer,
    Approval,
    Assignment,
    Decision,
    Reject,
    ToolCall,
    Verdict,
    canonical_json,
)

__all__ = [
    "ASK_DESCRIPTION",
    "ASK_PARAMETERS",
    "ASK_TOOL",
    "WAITS",
    "Question",
    "check_answering",
    "held_question",
    "question_assignment",
    "question_result",
    "question_verdict",
    "unaskable",
]

ASK_TOOL: Final = "ask_person"
"""The name of the ask tool an agent is given, unless it is named otherwise."""
ASK_DESCRIPTION: Final = (
    "Ask a person a question and wait for the answer. Give the question's text; optionally "
    "choices (with multiple: true to let them pick several), or a JSON schema of a flat form "
    "(strings, numbers, booleans, multi-select lists) instead; 'to' a person or role:NAME; a "
    "timeout like '30m' and a default answer for when nobody answers in time. The result says "
    "answered (with the answer and who gave it), declined (with why) or no_answer."
)
"""What the model reads of the ask tool, in every runtime and framework that offers it."""
ASK_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "What to ask."},
        "choices": {"type": "array", "items": {"type": "string"}},
        "multiple": {"type": "boolean", "description": "Several choices may be picked."},
        "schema": {"type": "object", "description": "A flat form, as MCP elicitation's."},
        "to": {"type": "string", "description": "A person, or role:NAME."},
        "timeout": {"type": ["string", "number"], "description": "Like '30m', or seconds."},
        "default": {"description": "The answer when nobody answers in time."},
    },
    "required": ["question"],
    "additionalProperties": False,
}
"""The ask tool's arguments as the model writes them (`Question.from_args` checks them)."""
WAITS: Final = "a question waits for a person"
"""Why a question the policy allows is held all the same."""
MAX_TEXT: Final = 4096
"""The longest question, in UTF-8 bytes."""
MAX_CHOICES: Final = 50
MAX_CHOICE: Final = 200
"""The longest choice, in characters."""
MAX_SCHEMA: Final = 16384
"""The largest form, in bytes of canonical JSON."""
_KEYS: Final = frozenset({"question", "choices", "multiple", "schema", "to", "timeout", "default"})


@dataclass(frozen=True, kw_only=True)
class Question:
    """What an agent asks: text, and optionally choices (one, or several with `multiple`) or
    a form; who to ask, how long to wait and what to answer when nobody does."""

    text: str
    choices: tuple[str, ...] = ()
    multiple: bool = False
    form: dict[str, Any] | None = None
    """A form to fill in (MCP elicitation's schema subset: `signoff.gate.forms`)."""
    to: str | None = None
    """A person, or ``role:NAME``, the question is handed to at once."""
    timeout: float | None = None
    """Seconds to wait for an answer; None: as long as the rule says."""
    default: Any = None
    has_default: bool = False
    """Whether `default` is the answer the agent gets when nobody answers in time."""

    @classmethod
    def from_args(cls, args: Any) -> Question:
        """The question in a call's arguments, or `FormError` naming the field that is wrong."""
        if not isinstance(args, dict):
            raise FormError("question: the arguments are an object")
        for key in args:
            if key not in _KEYS:
                raise FormError(f"question.{key}: not part of a question ({', '.join(_KEYS)})")
        text = args.get("question")
        if not isinstance(text, str) or not text.strip():
            raise FormError("question.question: the question's text is required")
        if len(text.encode()) > MAX_TEXT:
            raise FormError(f"question.question: at most {MAX_TEXT} bytes")
        if args.get("choices") is not None and args.get("schema") is not None:
            raise FormError("question.schema: a question has choices or a form, not both")
        question = cls(
            text=text,
            choices=_choices(args.get("choices")),
            multiple=_multiple(args.get("multiple")),
            form=_form(args.get("schema")),
            to=_to(args.get("to")),
            timeout=_timeout(args.get("timeout")),
            default=args.get("default"),
            has_default=args.get("default") is not None,
        )
        if question.has_default:
            check_answer(question.default, question.answer_schema, "question.default")
        return question

    @property
    def answer_schema(self) -> dict[str, Any]:
        """The JSON schema an answer must fit: the form, the choices, or non-empty text."""
        if self.form is not None:
            return self.form
        if not self.choices:
            return {"type": "string", "minLength": 1}
        one = {"type": "string", "enum": list(self.choices)}
        return {"type": "array", "items": one, "minItems": 1} if self.multiple else one


def _choices(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not value or len(value) > MAX_CHOICES:
        raise FormError(f"question.choices: a list of 1 to {MAX_CHOICES} choices")
    for i, choice in enumerate(value):
        if not isinstance(choice, str) or not choice.strip() or len(choice) > MAX_CHOICE:
            raise FormError(f"question.choices[{i}]: text of 1 to {MAX_CHOICE} characters")
    if len(set(value)) != len(value):
        raise FormError("question.choices: each choice once")
    return tuple(value)


def _multiple(value: Any) -> bool:
    if value is None:  # as for every field: null is not given (a strict schema's way)
        return False
    if not isinstance(value, bool):
        raise FormError("question.multiple: true or false")
    return value


def _form(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if len(canonical_json(value)) > MAX_SCHEMA:
        raise FormError(f"question.schema: at most {MAX_SCHEMA} bytes as JSON")
    check_form(value)
    # As it is held, with its fields' order written down: a form over the limit then would be
    # one its own answers could not be checked against.
    if len(canonical_json(with_order(value))) > MAX_SCHEMA:
        raise FormError(f"question.schema: at most {MAX_SCHEMA} bytes as JSON, its x-order too")
    return dict(value)


def _to(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return assignee(value)
    except InvalidDecisionError as exc:
        raise FormError(f"question.to: {exc}") from None


def _timeout(value: Any) -> float | None:
    if value is None:
        return None
    reader = Reader()
    seconds = reader.duration(value, ("question", "timeout"))
    if seconds is None:
        raise FormError(f"question.timeout: {reader.problems[0].message}")
    return seconds


def question_verdict(call: ToolCall, verdict: Verdict) -> Verdict:
    """How a question is judged: as the policy says of its kind, except that it always waits for
    a person — one person, for the question's own time when it gives one — and a question that
    is not one is blocked with why."""
    try:
        question = Question.from_args(call.args)
    except FormError as exc:
        return unaskable(str(exc))
    if verdict.kind == "deny":
        return replace(verdict, reason=f"the agent may not ask this: {verdict.reason}")
    held = replace(verdict, kind="ask", quorum=None, on_timeout=None)
    if verdict.kind == "allow":
        held = replace(held, reason=WAITS)
    if question.timeout is not None:
        held = replace(held, timeout=question.timeout)
    return held


def unaskable(problem: str) -> Verdict:
    """The verdict that blocks a question that is not one, saying why (`problem` names the
    field): the agent is told so as its tool's result."""
    return Verdict(kind="deny", rule=None, reason=f"the question cannot be asked: {problem}")


def held_question(call: ToolCall) -> ToolCall:
    """A question's call as it is held: its form's field order written into the form (`ORDER`
    of `signoff.gate.forms`), for every channel to show the fields as the agent wrote them —
    the stored arguments are canonical JSON, whose keys are sorted. Any other call as it is."""
    form = call.args.get("schema") if call.kind == "question" else None
    if not isinstance(form, dict):
        return call
    return replace(call, args=call.args | {"schema": with_order(form)})


def question_assignment(call: ToolCall, at: datetime) -> Assignment | None:
    """The assignment a question that names its person (or role) is held with."""
    if call.kind != "question":
        return None
    to = Question.from_args(call.args).to
    if to is None:
        return None
    return Assignment(to=to, by=call.agent or AUTOMATIC, note="asked of them by the agent", at=at)


def check_answering(approval: Approval, decision: Decision) -> None:
    """`InvalidDecisionError` unless `decision` may be taken on `approval`: a question is
    answered (with an answer that fits it) or rejected (declined), and only a question is
    answered."""
    if approval.call.kind != "question":
        if isinstance(decision, Answer):
            raise InvalidDecisionError(
                f"approval {approval.id!r} holds a call, not a question: approve, edit, "
                "respond or reject it"
            )
        return
    if isinstance(decision, Answer):
        check_answer(decision.value, Question.from_args(approval.call.args).answer_schema)
    elif not isinstance(decision, Reject):
        raise InvalidDecisionError(
            f"approval {approval.id!r} is a question: a question is answered, not "
            f"{_taken(decision)} (answer it, or reject it to decline)"
        )


def _taken(decision: Decision) -> str:
    return {"approve": "approved", "edit": "edited", "respond": "responded to"}.get(
        decision.kind, decision.kind
    )


def question_result(approval: Approval) -> dict[str, Any]:
    """What the agent that asked is told of its question's outcome, wherever it becomes a tool
    result: the answer and who gave it, the reason it was declined, or no answer (with the
    question's default, when it gives one)."""
    decision = approval.decision
    if isinstance(decision, Answer):
        return {"status": "answered", "answer": decision.value, "answered_by": approval.decided_by}
    if isinstance(decision, Reject):
        return {"status": "declined", "reason": decision.reason or "no reason given"}
    question = Question.from_args(approval.call.args)
    if question.has_default:
        return {"status": "no_answer", "answer": question.default, "default": True}
    return {"status": "no_answer"}
