"""Insights: what the decisions of a window teach, per rule, tool and agent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from signoff.errors import SignoffError
from signoff.types.fields import same_named

if TYPE_CHECKING:
    from signoff.store.base import Store
    from signoff.store.insights import GroupStats

__all__ = ["DEFAULT_DAYS", "MAX_DAYS", "Insights", "gather", "window_days"]

DEFAULT_DAYS: Final = 30
MAX_DAYS: Final = 3650
"""Ten years: a window longer than any history signoff has kept."""


@dataclass(frozen=True, kw_only=True)
class Insights:
    """The groups of one window, most asked first."""

    days: int
    since: datetime
    """The window's start: calls asked since then count."""
    groups: tuple[GroupStats, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "since": self.since.isoformat(),
            "groups": [_group_json(g) for g in self.groups],
        }


def window_days(days: int) -> int:
    """`days`, or `SignoffError` naming the limits (1 to `MAX_DAYS`)."""
    if not 1 <= days <= MAX_DAYS:
        raise SignoffError(f"days must be from 1 to {MAX_DAYS}, not {days!r}")
    return days


async def gather(store: Store, *, days: int, now: datetime) -> Insights:
    """The insights of the `days` before `now`."""
    since = now - timedelta(days=window_days(days))
    groups = await store.decision_stats(since=since)
    return Insights(days=days, since=since, groups=tuple(groups))


def _group_json(group: GroupStats) -> dict[str, Any]:
    times = group.time_to_decision
    return {
        **same_named(group, ("rule", "tool", "agent", "asked")),
        **group.counts,
        "median_seconds": None if times is None else times.median_seconds,
        "p90_seconds": None if times is None else times.p90_seconds,
        "deciders": [{"name": name, "count": n} for name, n in group.deciders],
        "grant_uses": group.grant_uses,
    }
