"""What a run streams to whoever started or resumed it: the events stored in its log, and the
model's text as it streams, for live display."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from signoff.store.runs import StoredEvent

__all__ = ["RunEvent", "TextDelta"]


@dataclass(frozen=True, kw_only=True)
class TextDelta:
    """A piece of the model's text as it streams, for live display. Never stored: the whole
    text is stored as one ``text`` event when the turn is complete."""

    run_id: str
    text: str
    type: Literal["text_delta"] = "text_delta"

    @property
    def data(self) -> dict[str, Any]:
        return {"text": self.text}


RunEvent: TypeAlias = StoredEvent | TextDelta
"""What `Runner.start` and `Runner.resume` stream."""
