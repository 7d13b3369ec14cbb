"""Every error signoff raises on purpose.

    SignoffError
     ├── PolicyError            a policy or config file is wrong, with file, line and column
     ├── InvalidArgumentsError  tool arguments that are not representable as JSON
     │    └── InvalidEditError  edited arguments that break the tool's JSON schema
     ├── InvalidDecisionError   a decision that cannot apply: unknown scope, empty response, ...
     ├── NotFoundError          no approval, run or grant with that id
     ├── ConflictError          a different decision was already taken
     │    ├── StaleDecisionError  a decision sent on a version of the approval that changed since
     │    └── ClaimLost         a ledger claim another worker took over: its result is not kept
     ├── ForbiddenError         the actor may not take this decision
     ├── ApprovalTimeout        nobody decided within the time asked for
     ├── OutcomeUnknown         a call started once and its worker died: it is never run again
     ├── ExecutionFailed        the one execution of a call raised; later callers get its message
     ├── CallRefused            a call about to run is not the call that was judged or approved
     ├── StoreError             the database refused a change, or holds no signoff schema
     │    └── StoreUnavailableError  the database did not answer: unreachable, or too slow
     ├── CheckpointError        an audit checkpoint that is malformed, forged, or cannot be checked
     └── MissingExtraError      an optional part is used without its extra installed

Messages name the offending value and say what to do about it. Mapping errors to HTTP statuses
or exit codes is the job of the outer layers (server, cli), not of the code that raises them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from signoff.types.change import Change

__all__ = [
    "ApprovalTimeout",
    "CallRefused",
    "CheckpointError",
    "ClaimLost",
    "ConflictError",
    "ExecutionFailed",
    "ForbiddenError",
    "InvalidArgumentsError",
    "InvalidDecisionError",
    "InvalidEditError",
    "MissingExtraError",
    "NotFoundError",
    "OutcomeUnknown",
    "PolicyError",
    "Problem",
    "SignoffError",
    "StaleDecisionError",
    "StoreError",
    "StoreUnavailableError",
]


class SignoffError(Exception):
    """The base of every error signoff raises on purpose."""


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One mistake in a policy: what is wrong and where."""

    message: str
    path: str = ""
    """Where in the document, like ``rules[2].when.path.glob``; empty for the whole document."""
    source: str | None = None
    """The file name, or None for a policy given as data."""
    line: int | None = None
    """1-based line, when the document came from text."""
    column: int | None = None
    """1-based column, when the document came from text."""

    def __str__(self) -> str:
        where = self.source or "<policy>"
        if self.line is not None:
            where += f":{self.line}:{self.column}"
        at = f"{self.path}: " if self.path else ""
        return f"{where}: {at}{self.message}"


class PolicyError(SignoffError):
    """A policy or config document is wrong. `problems` lists every mistake found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class InvalidArgumentsError(SignoffError, ValueError):
    """Tool arguments that cannot be represented as JSON (and so cannot be digested or stored)."""


class InvalidEditError(InvalidArgumentsError):
    """Edited arguments that the tool's JSON schema refuses; names where, in both."""

    def __init__(self, message: str, *, path: str, schema_path: str) -> None:
        self.path = path
        """Where in the arguments, like ``/replicas``."""
        self.schema_path = schema_path
        """Which part of the schema refused it, like ``properties/replicas/maximum``."""
        super().__init__(f"{path or '/'}: {message} (schema: {schema_path})")


class InvalidDecisionError(SignoffError, ValueError):
    """A decision that cannot apply to this approval, whoever takes it."""


class NotFoundError(SignoffError, LookupError):
    """No object with the given id exists."""


class ConflictError(SignoffError):
    """The object was changed by someone else first, for example a different decision."""


class StaleDecisionError(ConflictError):
    """A decision sent on a version of the approval that changed since — edited, voted on,
    handed to someone, escalated, judged again by a new policy — is not taken: its sender
    decided on something else than what stands now. Its message names what changed."""

    def __init__(
        self,
        message: str,
        *,
        approval_id: str,
        seen: int | None,
        version: int,
        changes: tuple[Change, ...] = (),
    ) -> None:
        super().__init__(message)
        self.approval_id = approval_id
        self.seen = seen
        """The version the decision was sent on; None when it named none."""
        self.version = version
        """The approval's version now: what to show again, and to send a decision on."""
        self.changes = changes
        """What changed since `seen`, oldest first, as far as the approval keeps them."""


class ClaimLost(ConflictError):
    """A worker's claim on a ledger key ran out and another worker took the key over (an
    idempotent call run again): the first worker's result is not recorded — the key keeps the
    new holder's."""


class ForbiddenError(SignoffError):
    """The actor is not allowed to do this (role, self-approval, policy)."""


class ApprovalTimeout(SignoffError, TimeoutError):
    """Nobody decided within the time the caller was willing to wait."""


class OutcomeUnknown(SignoffError):
    """A call was started under this key and its worker stopped before it recorded a result:
    whether it ran is unknown, so it is not run again (unless declared idempotent)."""


class ExecutionFailed(SignoffError):
    """The one execution of a call raised: a later caller of the same key gets its message,
    never a second execution."""


class CallRefused(SignoffError):
    """A framework was about to run a call that is not what signoff let through: not the call
    the policy allowed, nor the call a person approved, nor their edit exactly (a tampered
    checkpoint, a forged resume, an adapter's mistake). It did not run; the refusal is audited."""


class StoreError(SignoffError):
    """The database cannot be opened, refused an operation, or holds no (or a newer) signoff
    schema."""


class StoreUnavailableError(StoreError):
    """The database did not answer: it cannot be reached, the connection to it was lost, or a
    statement outlasted its timeout. Worth trying again; where the connection was lost during
    the commit, whether the change was written is not known (the servers answer 503)."""


class CheckpointError(SignoffError, ValueError):
    """An audit checkpoint that is not one, whose signature does not match the key, or that
    cannot be checked (signed, and no key is configured)."""


class MissingExtraError(SignoffError, ImportError):
    """An optional part of signoff is used without its extra installed."""

    def __init__(self, feature: str, extra: str) -> None:
        super().__init__(f"{feature} needs the {extra!r} extra: pip install 'signoff[{extra}]'")
