"""What one notification says, whatever carries it: a webhook's JSON, a Slack message, an email."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from signoff.notify.settings import EventKind

__all__ = ["Notice"]

_ARGS_SHOWN = 1500
"""Characters of the arguments a message shows; the approval's page has them all."""
_VERBS = {
    "approved": "approved",
    "edited": "approved with edits",
    "responded": "answered instead of run",
    "rejected": "rejected",
    "cancelled": "cancelled",
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
    def title(self) -> str:
        if self.kind == "requested":
            return f"Approval needed: {self.tool}"
        if self.kind == "expired":
            return f"Expired without a decision: {self.tool} (not run)"
        if self.kind == "unknown":
            return f"Outcome unknown: {self.tool} may or may not have run"
        if self.kind == "assigned":
            return f"Assigned to {_whom(self.data.get('to'))} by {self.actor}: {self.tool}"
        if self.kind == "escalated":
            roles = ", ".join(map(str, self.data.get("to") or []))
            return f"Still waiting, now also for {roles}: {self.tool}"
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
        out.append(("Arguments", self.arguments()))
        if approval.get("reason"):
            out.append(("Why it asks", str(approval["reason"])))
        if approval.get("requested_by"):
            out.append(("Requested by", str(approval["requested_by"])))
        if self.kind in ("requested", "assigned", "escalated") and approval.get("expires_at"):
            out.append(("Expires", str(approval["expires_at"])))
        if self.kind == "assigned" and self.data.get("note"):
            out.append(("Note", _cut(str(self.data["note"]), 500)))
        if self.kind == "escalated":
            who = ", ".join(map(str, self.data.get("approvers") or [])) or "anyone"
            out.append(("May decide now", who))
        if self.kind == "decided" and self.data.get("automatic"):
            out.append(("Rule", str(self.data.get("rule") or "default")))
        decision = approval.get("decision") or {}
        if self.kind == "decided":
            if decision.get("reason"):
                out.append(("Reason", str(decision["reason"])))
            if decision.get("content"):
                out.append(("Response", _cut(str(decision["content"]), _ARGS_SHOWN)))
            if decision.get("always"):
                out.append(("Always", json.dumps(decision["always"])))
        return out

    def arguments(self) -> str:
        args = (self.approval or {}).get("args", {})
        return _cut(json.dumps(args, indent=2, ensure_ascii=False, default=str), _ARGS_SHOWN)

    def text(self) -> str:
        """The notice as plain text (an email's body, a chat message's fallback)."""
        lines = [self.title, ""]
        for label, value in self.facts():
            if "\n" in value:
                lines += [f"{label}:", *("    " + line for line in value.splitlines())]
            else:
                lines.append(f"{label}: {value}")
        if self.link:
            lines += ["", f"Open it: {self.link}"]
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


def _whom(to: Any) -> str:
    text = str(to)
    return f"everyone with the role {text[5:]}" if text.startswith("role:") else text


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
