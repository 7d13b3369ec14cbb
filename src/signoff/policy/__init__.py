"""Deciding allow, ask or deny for a tool call: pure and synchronous, no I/O beyond loading."""

from signoff.policy.engine import Explanation, PolicyEngine
from signoff.policy.model import Policy, Rule, SectionDefault

__all__ = ["Explanation", "Policy", "PolicyEngine", "Rule", "SectionDefault"]
