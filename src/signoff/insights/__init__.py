"""What the decisions teach: counts, times and deciders per rule, tool and agent over a window
(`gather`), and the policy changes they argue for (`suggest`), never applied by themselves."""

from __future__ import annotations

from signoff.insights.report import DEFAULT_DAYS, MAX_DAYS, Insights, gather, window_days
from signoff.insights.suggest import Suggestion, policy_diff, suggest

__all__ = [
    "DEFAULT_DAYS",
    "MAX_DAYS",
    "Insights",
    "Suggestion",
    "gather",
    "policy_diff",
    "suggest",
    "window_days",
]
