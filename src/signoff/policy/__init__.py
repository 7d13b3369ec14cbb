"""Deciding allow, ask or deny for a tool call: pure and synchronous, no I/O beyond loading."""

from signoff.policy.engine import Explanation, PolicyEngine
from signoff.policy.loader import Policy
from signoff.policy.model import Rule, SectionDefault

__all__ = ["Explanation", "Policy", "PolicyEngine", "Rule", "SectionDefault"]
