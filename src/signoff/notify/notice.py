"""What one notification says, whatever carries it: a webhook's JSON, a Slack message, an email."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from signoff.gate.forms import form_fields
from signoff.gate.preview import preview_text
from signoff.notify.settings import EventKind

__all__ = ["Notice"]

_ARGS_SHOWN = 1500
"""Characters of the arguments a message shows; the approval's page has them all."""
_PREVIEW_SHOWN = 1500
"""Characters of a held call's preview a message shows; the approval's page has it all."""
_TITLES = {
    "expired": "Expired without a decision: {tool} (not run)",
    "unknown": "Outcome unknown: {tool} may or may not have run",
    "assigned": "Assigned to {to} by {actor}: {tool}",
    "voted": "Approved by {actor}, {needed}: {tool}",
    "edited": "Edited by {actor}, {needed}: {tool}",
    "rejudged": "Judged again by a new policy: {tool}",
}
"""The titles of the notices that say the same for every call but its tool (and who, and how
many approvals more)."""

_VERBS = {
    "approved": "approved",
    "edited": "approved with edits",
    "responded": "answered instead of run",
    "rejected": "rejected",
    "cancelled": "cancelled",
    "answered": "answered",
}


@dataclass(frozen=True, kw_only=True)
class Notice:
    """One event, told to one sink."""

    id: str
    """The delivery's id: the same for every attempt, so a receiver can drop a repeat."""
    kind: EventKind
    at: datetime
    actor: str
    """Who made the event: the agent or requester, the decider, or signoff (expiry)."""
    tool: str
    approval: dict[str, Any] | None
    """The approval as the API shows it, arguments masked; None for an unknown outcome (or an
    approval since deleted)."""
    data: dict[str, Any]
    """The audit entry's data (for an unknown outcome: the tool, run and call)."""
    link: str | None
    """The approval's page in the web inbox."""

    @property
    def event(self) -> str:
        return f"{'call' if self.kind == 'unknown' else 'approval'}.{self.kind}"

    @property
    def question(self) -> dict[str, Any] | None:
        """The question the agent asks, when the held call is one (its arguments)."""
        approval = self.approval or {}
        args = approval.get("args")
        return args if approval.get("kind") == "question" and isinstance(args, dict) else None

    @property
    def answerable(self) -> bool:
        """Whether the notice tells of a question still waiting for its answer."""
        return self.question is not None and self._waiting()

    @property
    def title(self) -> str:
        if self.kind == "requested" and self.question is not None:
            return f"Question for you: {_cut(self.question.get('question', ''), 120)}"
        if self.kind == "requested":
            editor = self.data.get("edited_by")  # a message kept up to date says it at once
            return f"Approval needed: {self.tool}" + (f" (edited by {editor})" if editor else "")
        if self.kind == "escalated":
            roles = ", ".join(map(str, self.data.get("to") or []))
            return f"Still waiting, now also for {roles}: {self.tool}"
        if self.kind in _TITLES:
            return _TITLES[self.kind].format(
                tool=self.tool,
                actor=self.actor,
                to=_whom(self.data.get("to")),
                needed=_approvals(self.data.get("needed")),
            )
        status = self.data.get("status") or (self.approval or {}).get("status", "decided")
        if self.data.get("automatic"):
            return f"{self.tool} {_VERBS.get(status, status)} by signoff: nobody decided in time"
        return f"{self.tool} {_VERBS.get(status, status)} by {self.actor}"

    def facts(self) -> list[tuple[str, str]]:
        """Label and text of each thing worth saying, in order."""
        approval = self.approval or {}
        out: list[tuple[str, str]] = []
        if self.kind == "unknown":
            text = (
                "The worker running this call stopped before recording its result. signoff "
                "will not run it again: check whether it happened."
            )
            out.append(("What happened", text))
            for key, label in (("run_id", "Run"), ("call_id", "Call")):
                if self.data.get(key):
                    out.append((label, str(self.data[key])))
            return out
        if approval.get("input"):
            out.append(("Asked", _cut(str(approval["input"]), 300)))
        for key, label in (("agent", "Agent"), ("server", "MCP server")):
            if approval.get(key):
                out.append((label, str(approval[key])))
        editor = self.editor()
        if editor is not None:
            out.append(("Edited by", editor))
        if self.question is not None:
            out += _asked(self.question)
        else:
            out.append(("Arguments", self.arguments()))
        if editor is not None:
            out.append(("Requested arguments", self.arguments("requested_args")))
        if approval.get("quorum"):
            out.append(("Approvals", _votes(approval)))
        if self._waiting() and isinstance(approval.get("version"), int):
            out.append(("Version", str(approval["version"])))
        if self.kind == "requested" and isinstance(approval.get("preview"), dict):
            out.append(("Preview", _cut(preview_text(approval["preview"]), _PREVIEW_SHOWN)))
        if approval.get("reason"):
            out.append(("Why it asks", str(approval["reason"])))
        if approval.get("requested_by"):
            out.append(("Requested by", str(approval["requested_by"])))
        assigned = approval.get("assigned")
        if self._waiting() and self.kind != "assigned" and isinstance(assigned, dict):
            out.append(("Assigned to", f"{_whom(assigned.get('to'))} by {assigned.get('by')}"))
        if self._waiting() and approval.get("expires_at"):
            out.append(("Expires", str(approval["expires_at"])))
        if self.kind == "assigned" and self.data.get("note"):
            out.append(("Note", _cut(str(self.data["note"]), 500)))
        if self.kind == "escalated":
            who = ", ".join(map(str, self.data.get("approvers") or [])) or "anyone"
            out.append(("May decide now", who))
        if self.kind == "rejudged":
            policy = [c for c in approval.get("changes") or [] if c.get("kind") == "policy"]
            if policy and policy[-1].get("note"):
                out.append(("What changed", str(policy[-1]["note"])))
        if self.kind == "decided" and self.data.get("automatic"):
            out.append(("Rule", str(self.data.get("rule") or "default")))
        decision = approval.get("decision") or {}
        if self.kind == "decided":
            if decision.get("reason"):
                out.append(("Reason", str(decision["reason"])))
            if decision.get("content"):
                out.append(("Response", _cut(str(decision["content"]), _ARGS_SHOWN)))
            if decision.get("kind") == "answer":
                answer = json.dumps(decision.get("value"), indent=2, ensure_ascii=False)
                out.append(("Answer", _cut(answer, _ARGS_SHOWN)))
            if decision.get("always"):
                out.append(("Always", json.dumps(decision["always"])))
        return out

    def arguments(self, key: str = "args") -> str:
        """The arguments the call runs with (`key`: ``requested_args``, those it was asked
        with), as indented JSON within a bound."""
        args = (self.approval or {}).get(key, {})
        return _cut(json.dumps(args, indent=2, ensure_ascii=False, default=str), _ARGS_SHOWN)

    def editor(self) -> str | None:
        """Who edited the call's arguments, when someone did: the last edit while it waited
        (one of several approvers), else its decider (an edit that decided it)."""
        approval = self.approval or {}
        if not approval.get("edited"):
            return None
        edits = [c for c in approval.get("changes") or [] if c.get("kind") == "edit"]
        if edits:
            return str(edits[-1].get("by"))
        return str(approval.get("decided_by") or "someone")

    def standing(self) -> Notice:
        """This notice's approval as it stands now, for a message kept up to date in place:
        a request while it waits, then what it came to."""
        approval = self.approval or {}
        status = approval.get("status", "pending")
        if status == "pending":
            editor = self.editor()
            return replace(self, kind="requested", data={"edited_by": editor} if editor else {})
        if status == "expired":
            return replace(self, kind="expired", actor="signoff", data={})
        automatic = bool(approval.get("automatic"))
        decider = str(approval.get("decided_by") or "signoff")
        return replace(
            self,
            kind="decided",
            actor=decider,
            data={"status": status, "automatic": automatic, "rule": approval.get("rule")},
        )

    def _waiting(self) -> bool:
        """Whether the notice tells of a call still waiting for a decision."""
        waits = self.kind not in ("decided", "expired", "unknown")
        return waits and (self.approval or {}).get("status", "pending") == "pending"

    def text(self) -> str:
        """The notice as plain text (an email's body, a chat message's fallback)."""
        lines = [self.title, ""]
        for label, value in self.facts():
            if "\n" in value:
                lines += [f"{label}:", *("    " + line for line in value.splitlines())]
            else:
                lines.append(f"{label}: {value}")
        if self.link:
            verb = "Answer it" if self.answerable else "Open it"
            lines += ["", f"{verb}: {self.link}"]
        return "\n".join(lines) + "\n"

    def payload(self) -> dict[str, Any]:
        """The notice as a webhook's JSON body."""
        return {
            "id": self.id,
            "event": self.event,
            "at": self.at.isoformat(),
            "actor": self.actor,
            "title": self.title,
            "url": self.link,
            "approval": self.approval,
            "call": None if self.kind != "unknown" else self.data,
        }


def _asked(question: dict[str, Any]) -> list[tuple[str, str]]:
    """A question as a person reads it: its text, then its choices or its form's fields."""
    out = [("Question", _cut(str(question.get("question", "")), _ARGS_SHOWN))]
    choices = question.get("choices")
    if isinstance(choices, list):
        label = "Choose one or more" if question.get("multiple") else "Choose one"
        out.append((label, _cut("\n".join(f"- {c}" for c in choices), _ARGS_SHOWN)))
    form = question.get("schema")
    if isinstance(form, dict) and isinstance(form.get("properties"), dict):
        required = form.get("required") or []
        fields = [
            f"- {field.get('title') or name}{' (required)' if name in required else ''}"
            for name, field in form_fields(form)
            if isinstance(field, dict)
        ]
        out.append(("Fill in", _cut("\n".join(fields), _ARGS_SHOWN)))
    return out


def _approvals(needed: Any) -> str:
    """How many more approvals a call needs, in words."""
    if not isinstance(needed, int) or needed < 1:
        return "waiting"
    return f"{needed} more {'approval' if needed == 1 else 'approvals'} needed"


def _votes(approval: dict[str, Any]) -> str:
    """Who approved a call that needs several people so far, of how many."""
    voters = [str(v.get("by")) for v in approval.get("votes") or [] if isinstance(v, dict)]
    count = (approval.get("quorum") or {}).get("count")
    of = f" of {count}" if isinstance(count, int) else ""
    shown = f"{', '.join(voters)} ({len(voters)}{of})" if voters else f"none yet (0{of})"
    left = approval.get("needed")
    if approval.get("status") == "pending" and isinstance(left, dict) and left.get("roles"):
        shown += f"; still needed: one each with the roles {', '.join(map(str, left['roles']))}"
    return shown


def _whom(to: Any) -> str:
    text = str(to)
    return f"everyone with the role {text[5:]}" if text.startswith("role:") else text


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
