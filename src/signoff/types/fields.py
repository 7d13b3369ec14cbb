"""A value's attributes as data, where each is written under its own name."""

from __future__ import annotations

from typing import Any

__all__ = ["attributes"]


def attributes(value: object, *names: str) -> dict[str, Any]:
    """`value`'s attributes of these `names`, under those names, in that order."""
    return {name: getattr(value, name) for name in names}
