"""A checkpoint of the audit log: the head (how many entries, the last one's hash) at one
moment, as one line of text to keep outside the database, signed with a key it never holds.

The hash chain alone shows that the entries are consistent with each other; it cannot show that
the newest ones were not cut off and the head moved back, or that the whole chain was not
recomputed. A checkpoint kept elsewhere can: the log must still hold its entry with its hash.
Signed with ``SIGNOFF_AUDIT_KEY``, it can be kept anywhere, since nobody without the key can
make one; unsigned, it proves only as much as the place it is kept.

    signoff-audit-1.57.2026-11-22T12:00:00Z.<entry 57's hash>.<HMAC-SHA256 or "unsigned">
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from signoff.errors import CheckpointError

__all__ = ["KEY_VARIABLE", "Checkpoint", "audit_key"]

KEY_VARIABLE = "SIGNOFF_AUDIT_KEY"
"""The environment variable holding the key that signs checkpoints."""
_MIN_KEY = 16
_FORMAT = "signoff-audit-1"
_UNSIGNED = "unsigned"
_TIME = "%Y-%m-%dT%H:%M:%SZ"
_HEX = re.compile(r"[0-9a-f]{64}")
_SEQ = re.compile(r"0|[1-9][0-9]{0,18}")
_GENESIS = "0" * 64


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """The audit log's head at one moment."""

    seq: int
    """How many entries the log had: the number of the last one."""
    hash: str
    """That entry's hash (64 zeros for an empty log)."""
    at: datetime
    """When the checkpoint was made (UTC, to the second)."""
    signature: str | None = None
    """HMAC-SHA256 of the rest, in hex, with the audit key; None when unsigned."""

    @property
    def signed(self) -> bool:
        return self.signature is not None

    def text(self) -> str:
        """The one line to keep: `Checkpoint.parse` reads it back."""
        return f"{self._body()}.{self.signature or _UNSIGNED}"

    def sign(self, key: bytes) -> Checkpoint:
        return replace(self, signature=self._mac(key))

    def check(self, key: bytes | None) -> None:
        """Raise `CheckpointError` unless the checkpoint can be trusted with `key` (the
        configured audit key, or None): signed with it, or unsigned and no key configured."""
        if self.signature is None:
            if key is not None:
                raise CheckpointError(
                    f"the checkpoint is unsigned, but {KEY_VARIABLE} is set: anyone could have "
                    f"written it; give a signed one (or unset {KEY_VARIABLE} to check an "
                    "unsigned checkpoint you kept where the database's writers cannot reach)"
                )
            return
        if key is None:
            raise CheckpointError(
                f"the checkpoint is signed: set {KEY_VARIABLE} to the key it was signed with"
            )
        if not hmac.compare_digest(self.signature, self._mac(key)):
            raise CheckpointError(
                f"the checkpoint's signature does not match {KEY_VARIABLE}: it was altered or "
                "forged, or signed with another key"
            )

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """Read a checkpoint printed by ``signoff audit checkpoint``; `CheckpointError` names
        what is wrong with anything else."""
        parts = text.strip().split(".")
        if len(parts) != 5 or parts[0] != _FORMAT:
            raise CheckpointError(
                f"{_short(text)} is not an audit checkpoint: one is "
                f"{_FORMAT}.ENTRIES.TIME.HASH.SIGNATURE, as `signoff audit checkpoint` prints it"
            )
        _, seq, at, digest, signature = parts
        if not _SEQ.fullmatch(seq) or int(seq) >= 2**63:
            raise CheckpointError(f"the checkpoint's entry count {_short(seq)} is not a number")
        try:
            moment = datetime.strptime(at, _TIME).replace(tzinfo=UTC)
        except ValueError:
            raise CheckpointError(
                f"the checkpoint's time {_short(at)} is not a UTC time like 2026-11-22T12:00:00Z"
            ) from None
        if not _HEX.fullmatch(digest):
            raise CheckpointError(f"the checkpoint's hash {_short(digest)} is not 64 hex digits")
        if signature != _UNSIGNED and not _HEX.fullmatch(signature):
            raise CheckpointError(
                f"the checkpoint's signature {_short(signature)} is neither 64 hex digits "
                f"nor {_UNSIGNED!r}"
            )
        if seq == "0" and digest != _GENESIS:
            raise CheckpointError("the checkpoint of an empty log has a hash of 64 zeros")
        return cls(
            seq=int(seq),
            hash=digest,
            at=moment,
            signature=None if signature == _UNSIGNED else signature,
        )

    def _body(self) -> str:
        return f"{_FORMAT}.{self.seq}.{self.at.astimezone(UTC).strftime(_TIME)}.{self.hash}"

    def _mac(self, key: bytes) -> str:
        return hmac.new(key, self._body().encode(), hashlib.sha256).hexdigest()


def audit_key(environ: Mapping[str, str] = os.environ) -> bytes | None:
    """The key that signs checkpoints, from ``SIGNOFF_AUDIT_KEY``; None when unset or empty."""
    value = environ.get(KEY_VARIABLE, "").strip()
    if not value:
        return None
    if len(value) < _MIN_KEY:
        raise CheckpointError(
            f"{KEY_VARIABLE} is shorter than {_MIN_KEY} characters: use a long random key, "
            "like the output of `openssl rand -hex 32`"
        )
    return value.encode()


def _short(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "..."
