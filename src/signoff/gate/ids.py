"""Time-ordered ids: newest-first listing is an index scan on the primary key."""

from __future__ import annotations

import hashlib
import os
import threading
import time

from signoff.types import canonical_json

__all__ = ["ID_LENGTH", "external_key", "new_id"]

ID_LENGTH = 32
"""Characters of every id `new_id` makes."""

_lock = threading.Lock()
_last = (0, 0)


def new_id() -> str:
    """32 hex digits: 48 bits of milliseconds, then 80 bits that are random for each new
    millisecond and count up within one, so ids made by one process sort in creation order."""
    global _last
    with _lock:
        millis = time.time_ns() // 1_000_000
        last_millis, last_tail = _last
        if millis <= last_millis:
            millis, tail = last_millis, last_tail + 1
        else:
            tail = int.from_bytes(os.urandom(10)) >> 1  # leave room to count up
        _last = (millis, tail)
    return f"{millis:012x}{tail:020x}"


def external_key(origin: str, thread_id: str | None, call_id: str, turn: str | None = None) -> str:
    """The key a call of another framework's run is kept under: its origin, its thread, the
    model response it came from (`CheckContext.turn`, where the framework names one) and its
    own id (hashed: ids of any length fit)."""
    parts = [origin, thread_id, call_id] if turn is None else [origin, thread_id, turn, call_id]
    return hashlib.sha256(canonical_json(parts)).hexdigest()
