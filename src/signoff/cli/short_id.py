"""Short ids: the end of an approval's id, as `signoff inbox` shows it and `signoff
approve|reject` take it.

An id begins with its millisecond (see `signoff.gate.ids`), so approvals made together share
their first characters and differ at the end: the end is what tells them apart. A short id is
the id's last `SHORTEST` characters, or more while that also ends another id shown. Resolving one
is exact: the one approval whose id ends with it, or a refusal that decides nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from signoff.cli.program import program
from signoff.errors import NotFoundError, SignoffError
from signoff.gate.ids import ID_LENGTH

__all__ = ["ID_LENGTH", "SHORTEST", "resolve", "shorten"]

SHORTEST = 8
"""Characters of the shortest short id: 32 bits, random from one millisecond to the next."""

_LISTED = 10


def shorten(ids: Iterable[str]) -> dict[str, str]:
    """Each id's short id: its shortest end, of `SHORTEST` characters or more, that ends no
    other of `ids`."""
    ids = set(ids)
    shown: dict[str, str] = {}
    length = SHORTEST
    while len(shown) < len(ids):
        ends = Counter(i[-length:] for i in ids)
        for i in ids - shown.keys():
            if ends[i[-length:]] == 1 or length >= len(i):
                shown[i] = i[-length:]
        length += 1
    return shown


def resolve(short_id: str, find: Callable[[str, int], list[dict[str, Any]]]) -> str:
    """The id of the one approval `short_id` names: itself when it is a whole id, else the one
    of `find(short_id, limit)` (at most `limit` approvals as dicts, whose ids end with it).
    None, or more than one, is refused."""
    if len(short_id) == ID_LENGTH:
        return short_id
    if len(short_id) < SHORTEST:
        raise SignoffError(
            f"{short_id!r} is too short to name an approval: give the short id `{program()} inbox` "
            f"shows ({SHORTEST} characters or more) or the full id; the inbox's numbers hold "
            "only inside the inbox"
        )
    # Checked again here, so a lookup that matched loosely can never pick a call.
    found = [a for a in find(short_id, _LISTED + 1) if a["id"].endswith(short_id)]
    if not found:
        raise NotFoundError(f"no approval's id ends with {short_id!r}")
    if len(found) > 1:
        listed = "; ".join(f"{a['id']} ({a['tool']}, {a['status']})" for a in found[:_LISTED])
        more = "; and more" if len(found) > _LISTED else ""
        raise SignoffError(
            f"{short_id!r} ends the ids of more than one approval: {listed}{more}. Give more of "
            "the id; nothing was decided"
        )
    return str(found[0]["id"])
