"""The ids a protocol's client names — A2A's ``messageId``, ``contextId`` and ``taskId``, AG-UI's
``threadId`` and ``runId`` — checked where they come in, before the store reads or writes
anything with them: at most 200 characters (the store's keys are no longer), and no NUL
character (PostgreSQL keeps none in text, where SQLite would: the two would answer differently).

Free text (a message's words, a tool's arguments, a reason) may hold a NUL: the store keeps it
inside JSON, escaped."""

from __future__ import annotations

__all__ = ["LONGEST", "id_problem"]

LONGEST = 200
"""The longest id taken."""


def id_problem(name: str, value: str, *, required: bool = False) -> str | None:
    """What is wrong with the id `value` a client gave as `name`, or None; `required`: it may
    not be empty."""
    if len(value) > LONGEST or (required and not value):
        if required:
            return f"{name} must have 1 to {LONGEST} characters"
        return f"{name} is longer than {LONGEST} characters"
    if "\x00" in value:
        return f"{name} has a NUL character (\\u0000): an id is text without one"
    return None
