"""What the decisions teach: counts, times and deciders per rule, tool and agent over a window
(`gather`), and the policy changes they argue for (`suggest`), never applied by themselves."""

from __future__ import annotations

from typing import TYPE_CHECKING

from signoff._lazy import lazy_exports as _lazy_exports
from signoff.insights.report import DEFAULT_DAYS, MAX_DAYS, Insights, gather, window_days

if TYPE_CHECKING:
    from signoff.insights.suggestions import Suggestion, policy_diff, suggest

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

# Loaded when first named: the ``signoff`` command names the window's bounds without YAML.
__getattr__ = _lazy_exports(
    __name__,
    dict.fromkeys(("Suggestion", "policy_diff", "suggest"), "signoff.insights.suggestions"),
)
