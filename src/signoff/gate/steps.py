"""What an integration reads of a call of the framework's run: how the gate judged it (`Held`)
and what to do with it now (`Step`, from `ExternalRuns.step`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from signoff.store.external import ExternalRecord
from signoff.types import Approval, ToolCall

__all__ = ["Held", "Step"]


@dataclass(frozen=True, kw_only=True)
class Held:
    """A call of the framework's run as the gate judged it, and its approval as it stands."""

    record: ExternalRecord
    approval: Approval | None


@dataclass(frozen=True, kw_only=True)
class Step:
    """What an integration does with one call of the framework's run (`ExternalRuns.step`)."""

    kind: Literal["run", "answer", "wait"]
    """``run`` the call (through `ExternalRuns.once`), ``answer`` the model with `text`
    instead, or ``wait`` for a person's decision."""
    key: str
    """The key the call is kept and run once under."""
    call: ToolCall | None = None
    """For ``run``: the call to run — as proposed, or with a person's edit."""
    edited: dict[str, Any] | None = None
    """For ``run``: the arguments a person edited the call to, if they did."""
    text: str = ""
    """For ``answer``: what the model is told instead of a result."""
    ok: bool = True
    """For ``answer``: a person's response (True), or a refusal or rejection (False)."""
    approval: Approval | None = None
    """The call's approval, for a held call."""
