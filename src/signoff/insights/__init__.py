"""What the decisions teach: counts, times and deciders per rule, tool and agent over a window
(`gather`), and the policy changes they argue for (`suggest`), never applied by themselves —
with the candidates that came nearest to one (`weigh`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from signoff._lazy import lazy_exports as _lazy_exports
from signoff.insights.report import DEFAULT_DAYS, MAX_DAYS, Insights, gather, window_days

if TYPE_CHECKING:
    from signoff.insights.candidates import Candidate
    from signoff.insights.suggestions import Suggestion, Weighed, policy_diff, suggest, weigh

__all__ = [
    "DEFAULT_DAYS",
    "MAX_DAYS",
    "Candidate",
    "Insights",
    "Suggestion",
    "Weighed",
    "gather",
    "policy_diff",
    "suggest",
    "weigh",
    "window_days",
]

# Loaded when first named: the ``signoff`` command names the window's bounds without YAML.
__getattr__ = _lazy_exports(
    __name__,
    {
        **dict.fromkeys(
            ("Suggestion", "Weighed", "policy_diff", "suggest", "weigh"),
            "signoff.insights.suggestions",
        ),
        "Candidate": "signoff.insights.candidates",
    },
)
