"""Times in the database: exact integer microseconds since the epoch, UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = ["from_micros", "to_micros"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_micros(moment: datetime) -> int:
    """Naive datetimes are a bug, not a guess."""
    if moment.tzinfo is None:
        raise ValueError(f"timestamps must be timezone-aware, not {moment!r}")
    return (moment - _EPOCH) // _MICROSECOND


def from_micros(value: int) -> datetime:
    return _EPOCH + value * _MICROSECOND
