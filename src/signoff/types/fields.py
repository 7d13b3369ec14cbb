"""A value's fields as data, where each is written under its own name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["same_named"]


def same_named(source: Any, names: Iterable[str]) -> dict[str, Any]:
    """`source`'s attributes of these names, by name, in that order: the fields that a record,
    a row, a verdict or a document holds under the same names — read from one into another."""
    return {name: getattr(source, name) for name in names}
