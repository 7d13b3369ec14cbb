"""Short ids: the end of an approval's id, longer only where the end is shared."""

from __future__ import annotations

from typing import Any

import pytest

from signoff.cli import short_id
from signoff.cli.short_id import resolve, shorten
from signoff.errors import NotFoundError, SignoffError
from signoff.gate.ids import new_id


def test_ids_made_together_differ_in_their_last_eight_characters():
    ids = [new_id() for _ in range(1000)]
    assert shorten(ids) == {i: i[-8:] for i in ids}


def test_a_shared_end_is_extended_until_it_tells_the_ids_apart():
    shared = ["0193aaaaaaaa" + "0" * 12 + "deadbeef", "0193bbbbbbbb" + "1" * 12 + "deadbeef"]
    other = "0193cccccccc" + "2" * 12 + "0badf00d"
    assert shorten([*shared, other]) == {
        shared[0]: "0deadbeef",
        shared[1]: "1deadbeef",
        other: "0badf00d",
    }


def test_resolving_never_guesses():
    approvals = [{"id": "0" * 24 + "deadbeef", "tool": "t", "status": "pending"}]

    def find(short: str, limit: int) -> list[dict[str, Any]]:
        return approvals  # a lookup that matched too loosely

    assert resolve("deadbeef", find) == approvals[0]["id"]
    with pytest.raises(NotFoundError, match="no approval's id ends with 'feedbeef'"):
        resolve("feedbeef", find)
    with pytest.raises(SignoffError, match="'beef' is too short"):
        resolve("beef", find)


def test_the_cli_knows_an_id_s_length_as_the_gate_makes_ids():
    assert len(new_id()) == short_id.ID_LENGTH
    whole = new_id()
    assert resolve(whole, lambda short, limit: []) == whole  # a whole id is taken as it is
