"""signoff puts a human between AI agents and their risky tool calls."""

from importlib.metadata import PackageNotFoundError, version

from signoff.errors import (
    ApprovalTimeout,
    ConflictError,
    ForbiddenError,
    InvalidArgumentsError,
    MissingExtraError,
    NotFoundError,
    PolicyError,
    Problem,
    SignoffError,
)
from signoff.policy import Explanation, Policy, PolicyEngine, Rule
from signoff.types import (
    Approve,
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

try:
    __version__ = version("signoff")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = [
    "ApprovalTimeout",
    "Approve",
    "Cancelled",
    "ConflictError",
    "Context",
    "Decision",
    "Edit",
    "Expired",
    "Explanation",
    "ForbiddenError",
    "Grant",
    "InvalidArgumentsError",
    "MissingExtraError",
    "NotFoundError",
    "Policy",
    "PolicyEngine",
    "PolicyError",
    "Problem",
    "Reject",
    "Respond",
    "Rule",
    "Scope",
    "SignoffError",
    "ToolCall",
    "Verdict",
    "__version__",
]
