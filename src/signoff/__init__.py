"""signoff puts a human between AI agents and their risky tool calls."""

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from signoff.errors import (
    ApprovalTimeout,
    ConflictError,
    ForbiddenError,
    InvalidArgumentsError,
    InvalidDecisionError,
    InvalidEditError,
    MissingExtraError,
    NotFoundError,
    PolicyError,
    Problem,
    SignoffError,
)
from signoff.policy import Explanation, Policy, PolicyEngine, Rule
from signoff.types import (
    Approval,
    Approve,
    AuditEntry,
    Cancelled,
    Context,
    Decision,
    Edit,
    Expired,
    Grant,
    Reject,
    Respond,
    Scope,
    ToolCall,
    Verdict,
)

if TYPE_CHECKING:
    from signoff.agent import Tool, tool
    from signoff.gate import CheckContext, Gate, Outcome
    from signoff.store import open_store

# The gate and the store bring SQLAlchemy, the agent runtime pydantic; they load on first use so
# that importing signoff for its policy engine stays light.
_LAZY = {
    "CheckContext": "signoff.gate",
    "Gate": "signoff.gate",
    "Outcome": "signoff.gate",
    "open_store": "signoff.store",
    "Tool": "signoff.agent",
    "tool": "signoff.agent",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'signoff' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


try:
    __version__ = version("signoff")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = [
    "Approval",
    "ApprovalTimeout",
    "Approve",
    "AuditEntry",
    "Cancelled",
    "CheckContext",
    "ConflictError",
    "Context",
    "Decision",
    "Edit",
    "Expired",
    "Explanation",
    "ForbiddenError",
    "Gate",
    "Grant",
    "InvalidArgumentsError",
    "InvalidDecisionError",
    "InvalidEditError",
    "MissingExtraError",
    "NotFoundError",
    "Outcome",
    "Policy",
    "PolicyEngine",
    "PolicyError",
    "Problem",
    "Reject",
    "Respond",
    "Rule",
    "Scope",
    "SignoffError",
    "Tool",
    "ToolCall",
    "Verdict",
    "__version__",
    "open_store",
    "tool",
]
