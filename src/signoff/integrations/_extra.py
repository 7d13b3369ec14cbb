"""A framework imported by its adapter: without the framework installed, the error says which of
signoff's extras installs it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from signoff.errors import MissingExtraError

__all__ = ["needs"]


@contextlib.contextmanager
def needs(feature: str, extra: str) -> Iterator[None]:
    """Import the parts of `feature` (its module's name) that import the framework: an
    `ImportError` among them raises `MissingExtraError`, naming `extra`."""
    try:
        yield
    except ImportError as exc:
        raise MissingExtraError(feature, extra) from exc
