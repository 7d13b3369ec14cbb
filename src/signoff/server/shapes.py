"""The shapes of the API: request bodies, checked by pydantic, and the JSON of approvals and
events, shared by the REST, SSE and WebSocket channels."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from signoff.errors import InvalidDecisionError, StaleDecisionError
from signoff.gate.deciders import MAX_NOTE, needed
from signoff.gate.preview import masked
from signoff.gate.versions import MAX_VERSION
from signoff.limits import PREVIEW_CHARS, clip
from signoff.redaction import Redaction
from signoff.store.runs import StoredEvent
from signoff.types import (
    Answer,
    Approval,
    Approve,
    CallKind,
    Decision,
    Edit,
    Reject,
    Respond,
    Scope,
    approval_to_dict,
    change_to_dict,
    grant_to_dict,
    preview_from_dict,
    preview_to_dict,
)

T = TypeVar("T")
_ARGUMENTS = frozenset({"args", "requested_args"})
"""The keys that hold a call's arguments, wherever they are in the API's data."""
_PREVIEW_KEYS = frozenset({"kind", "body", "truncated", "error"})
"""The keys of a preview, as `preview_to_dict` makes it."""
PREVIEW_BYTES = 64 * 1024
"""The most a listing shows of one call's arguments (as JSON, once long strings are cut)."""
LISTED_CHANGES = 10
"""The most of an approval's changes a listing shows: the newest (its own page has them all)."""
LISTED_PREVIEW_CHARS = 8000
"""The most a listing shows of a held call's preview (text, or a table's rows as JSON)."""
MAX_SEQ = 2**62
"""The largest sequence number (of an event, an audit entry) a request may name: the
databases' integers stop at 2**63."""

__all__ = [
    "INPUT_CHARS",
    "MAX_SEQ",
    "Always",
    "AssignBody",
    "DecisionBody",
    "Decisions",
    "ExplainBody",
    "ExplainContext",
    "PolicyBody",
    "PreviewBody",
    "StartRun",
    "ToggleBody",
    "approval_json",
    "cut_input",
    "event_json",
    "grant_json",
    "iso",
    "previewed",
    "seen_version",
    "shown",
    "sse",
    "stale_json",
    "verdict_json",
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StartRun(_Body):
    agent: str = Field(min_length=1)
    input: str


class Always(_Body):
    scope: Literal["run", "thread", "agent", "global"]
    with_args: bool = True
    """Only calls with exactly the approved arguments (the default); false: any arguments."""


class DecisionBody(_Body):
    kind: Literal["approve", "edit", "respond", "reject", "answer"]
    args: dict[str, Any] | None = None
    content: str | None = None
    value: Any = None
    """An answer to a question: text, a choice, the choices, or a form's fields."""
    reason: str | None = None
    always: Always | None = None
    version: StrictInt | None = Field(default=None, ge=1, le=MAX_VERSION)
    """The approval's version the decision was made on (as it was shown: its ``version``):
    one that changed since gets 409 naming what changed. Also taken from ``If-Match``."""

    def decision(self) -> Decision:
        """The decision, or `InvalidDecisionError` naming the field that is missing."""
        match self.kind:
            case "approve":
                scope = self.always
                always = (
                    None if scope is None else Scope(kind=scope.scope, with_args=scope.with_args)
                )
                return Approve(always=always)
            case "edit":
                if self.args is None:
                    raise InvalidDecisionError("an edit needs 'args': the arguments to run with")
                return Edit(args=self.args)
            case "respond":
                if self.content is None:
                    raise InvalidDecisionError("a response needs 'content': the text to return")
                return Respond(content=self.content)
            case "answer":
                if "value" not in self.model_fields_set or self.value is None:
                    raise InvalidDecisionError("an answer needs 'value': what the person answers")
                return Answer(value=self.value)
            case _:
                return Reject(reason=self.reason or "")


class ExplainBody(_Body):
    tool: str = Field(min_length=1)
    """The tool's name; with `kind`, the URI of a resource or the name of a prompt."""
    kind: CallKind = "tool"
    """A tool call, or an MCP resource read or prompt got (as the MCP gateway judges them)."""
    args: dict[str, Any] = Field(default_factory=dict)
    server: str | None = None
    agent: str | None = None
    context: ExplainContext | None = None
    """The run, thread and requester the call would have: grants are weighed for it. Without
    it, grants are weighed for a call of no run, thread or known requester."""


class PolicyBody(_Body):
    document: dict[str, Any]
    """The whole policy, as a file would write it (JSON for YAML)."""
    version: str | None = Field(default=None, max_length=64)
    """The policy version the document was made from: another change since gets 409."""


class ToggleBody(_Body):
    verdict: Literal["allow", "ask", "deny"]
    version: str | None = None
    """The policy version the change was made against: another change since gets 409."""


class AssignBody(_Body):
    to: str = Field(min_length=1, max_length=200)
    """A principal's name, or ``role:NAME``."""
    note: str = Field(default="", max_length=MAX_NOTE)


class PreviewBody(_Body):
    args: dict[str, Any]
    """The edited arguments to preview the call with (masked values as the API showed them)."""


class Decisions(_Body):
    decisions: dict[str, DecisionBody] = Field(min_length=1)


INPUT_CHARS = 1000
"""The most an approval shows of what the user asked its run (the run's page has it all)."""


def approval_json(approval: Approval, inputs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The approval as every channel shows it. With `inputs` (what each run was started with,
    by run id: `Store.run_inputs`), also `input`: what the user asked the approval's run, cut
    to `INPUT_CHARS`, or null for a call no run of signoff's holds (the MCP gateway's, the
    gate's, another framework's)."""
    data = approval_to_dict(approval)
    quorum = approval.quorum
    # A call that needs several people: who is still needed (the card shows it).
    left = None if quorum is None or not approval.pending else needed(quorum, approval.votes)
    data["needed"] = None if left is None else {"people": left.people, "roles": list(left.roles)}
    if inputs is not None:
        data["input"] = cut_input(None if approval.run_id is None else inputs.get(approval.run_id))
    return data


def seen_version(body: int | None, if_match: str | None) -> int | None:
    """The version a decision was made on: its body's, or its ``If-Match`` header's (an ETag
    the approval's page gave, ``"3"``, or a bare ``3``); both given must agree."""
    if if_match is None:
        return body
    tag = if_match.strip().removeprefix("W/").strip('"')
    if not (tag.isascii() and tag.isdigit() and len(tag) <= 10) or not 1 <= int(tag) <= MAX_VERSION:
        raise InvalidDecisionError(
            f'If-Match {if_match[:40]!r} is not a version of an approval: send its ETag, like "3"'
        )
    if body is not None and body != int(tag):
        raise InvalidDecisionError(
            f"the body says version {body} and If-Match says {tag}: send one, or both alike"
        )
    return int(tag)


def stale_json(error: StaleDecisionError, redaction: Redaction) -> dict[str, Any]:
    """What a 409 for a decision on a version that changed since adds to its words: the
    version seen and the one now, and the changes between, redacted values masked."""
    return {
        "approval_id": error.approval_id,
        "seen": error.seen,
        "version": error.version,
        "changes": redaction.tree([change_to_dict(c) for c in error.changes]),
    }


def cut_input(asked: str | None) -> str | None:
    """What a run was asked, cut to `INPUT_CHARS`."""
    if asked is not None and len(asked) > INPUT_CHARS:
        return asked[: INPUT_CHARS - 1] + "…"
    return asked


def shown(data: T, redaction: Redaction) -> T:
    """`data` as the API sends it whole: what nests too deep cut (it breaks JSON encoders), the
    redacted arguments masked, in the calls' previews too."""
    clipped, _ = clip(data)
    return redaction.tree(_previews_masked(cast(T, clipped), redaction))


def previewed(data: dict[str, Any], redaction: Redaction) -> dict[str, Any]:
    """`data` as a listing sends it: `shown`, with the long strings of every call's arguments
    cut too, an approval's newest changes only, and ``truncated`` saying whether anything was
    (the item's own page has it all)."""
    clipped, cut = clip(data)
    clipped = _previews_masked(clipped, redaction)  # before a cut could split a value

    def walk(item: Any) -> Any:
        nonlocal cut
        if isinstance(item, list):
            return [walk(v) for v in item]
        if not isinstance(item, dict):
            return item
        out = {}
        for key, value in item.items():
            if key == "preview" and isinstance(value, dict):
                value, shortened = _listed_preview(value)
                cut = cut or shortened
                out[key] = value
            elif key == "changes" and isinstance(value, list) and len(value) > LISTED_CHANGES:
                cut = True  # the newest changes: what a card shows of what happened
                out[key] = walk(value[-LISTED_CHANGES:])
            elif key in _ARGUMENTS:
                value, shortened = clip(value, chars=PREVIEW_CHARS)
                size = len(json.dumps(value))
                if size > PREVIEW_BYTES:  # a great many short values: none of them listed
                    value, shortened = f"…({size:,} bytes of arguments, not listed)", True
                cut = cut or shortened
                out[key] = value
            else:
                out[key] = walk(value)
        return out

    return cast(dict[str, Any], redaction.tree(walk(clipped))) | {"truncated": cut}


def _previews_masked(data: T, redaction: Redaction) -> T:
    """`data` with the preview of every call in it masked by the call's own arguments (as asked
    and as edited; see `signoff.gate.preview.masked`): a framework's app computes its previews
    without knowing this server's ``redact:``."""
    if not redaction:
        return data

    def walk(item: Any) -> Any:
        if isinstance(item, list):
            return [walk(v) for v in item]
        if not isinstance(item, dict):
            return item
        out = {k: v if k in _ARGUMENTS else walk(v) for k, v in item.items()}
        preview = item.get("preview")
        given = sorted(_ARGUMENTS & item.keys())
        if given and isinstance(preview, dict) and preview.keys() >= _PREVIEW_KEYS:
            arguments = [item[k] for k in given]
            out["preview"] = preview_to_dict(
                masked(preview_from_dict(preview), redaction, *arguments)
            )
        return out

    return cast(T, walk(data))


def _listed_preview(preview: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """A preview as a listing shows it: its text, or its table's rows, cut to
    `LISTED_PREVIEW_CHARS`; and whether it was."""
    body = preview.get("body")
    if isinstance(body, str) and len(body) > LISTED_PREVIEW_CHARS:
        return preview | {"body": body[:LISTED_PREVIEW_CHARS] + "…", "truncated": True}, True
    if isinstance(body, list):
        rows: list[Any] = []
        size = 0
        for row in body:
            size += len(json.dumps(row))
            if size > LISTED_PREVIEW_CHARS:
                return preview | {"body": rows, "truncated": True}, True
            rows.append(row)
    return preview, False


class ExplainContext(_Body):
    """Where the explained call would be made, for the grants that could let it through."""

    run_id: str | None = None
    thread_id: str | None = None
    requested_by: str | None = None


def event_json(event: StoredEvent) -> dict[str, Any]:
    return {
        "run_id": event.run_id,
        "seq": event.seq,
        "at": iso(event.at),
        "type": event.type,
        "data": event.data,
    }


def sse(data: dict[str, Any], kind: str, event_id: str) -> str:
    """One server-sent event."""
    return f"id: {event_id}\nevent: {kind}\ndata: {json.dumps(data)}\n\n"


def verdict_json(verdict: Any) -> dict[str, Any]:
    return {"kind": verdict.kind, "rule": verdict.rule, "reason": verdict.reason}


grant_json = grant_to_dict
"""A grant as every channel shows it."""


def iso(moment: datetime) -> str:
    return moment.isoformat()
