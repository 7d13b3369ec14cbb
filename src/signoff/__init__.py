"""signoff puts a human between AI agents and their risky tool calls."""

from typing import TYPE_CHECKING, Any

from signoff._lazy import lazy_exports as _lazy_exports
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
from signoff.types import (
    Answer,
    Approval,
    Approve,
    AuditEntry,
    Cancelled,
    Context,
    Decision,
    Edit,
    Expired,
    Grant,
    Preview,
    Reject,
    Respond,
    Scope,
    ToolCall,
    Verdict,
)

if TYPE_CHECKING:
    from signoff.agent import Tool, ask_person, tool
    from signoff.gate import CheckContext, Gate, Outcome
    from signoff.policy import Explanation, Policy, PolicyEngine, Rule
    from signoff.store import open_store

    __version__: str

# The gate and the store bring SQLAlchemy, the agent runtime pydantic, the policy YAML and JSON
# Schema; each loads on first use, so that `import signoff` (and the `signoff` command's start)
# stays light.
_LAZY = {
    **dict.fromkeys(("CheckContext", "Gate", "Outcome"), "signoff.gate"),
    **dict.fromkeys(("Explanation", "Policy", "PolicyEngine", "Rule"), "signoff.policy"),
    "open_store": "signoff.store",
    **dict.fromkeys(("Tool", "ask_person", "tool"), "signoff.agent"),
}


_exported = _lazy_exports(__name__, _LAZY)


def __getattr__(name: str) -> Any:
    if name != "__version__":
        return _exported(name)
    globals()[name] = value = _version()  # looked up once
    return value


def _version() -> str:
    # importlib.metadata reads the installed distributions: only when asked.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("signoff")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "0.0.0"


__all__ = [
    "Answer",
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
    "Preview",
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
    "ask_person",
    "open_store",
    "tool",
]
