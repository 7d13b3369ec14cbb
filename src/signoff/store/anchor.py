"""Where the audit log starts once its oldest entries are pruned: the anchor.

Pruning deletes entries 1 to N. The chain from N + 1 on still links, through entry N + 1's
`prev_hash`, to entry N's hash, which the anchor keeps with the signed checkpoint that covered
entry N (a checkpoint of entry N or a later one, checked against the log before the prune).
The anchor is signed too, with the same key: whoever can write to the database but does not
hold ``SIGNOFF_AUDIT_KEY`` can neither cut more entries off and move the anchor after them,
nor write an anchor for a log whose start they deleted. A log cut at its start without an
anchor still fails verification at its first entry, as it always did.

    signoff-anchor-1.<N>.<entry N's hash>.<the checkpoint's text>  →  HMAC-SHA256 with the key
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from signoff.errors import CheckpointError
from signoff.store import schema
from signoff.store.checkpoint import KEY_VARIABLE, Checkpoint
from signoff.store.times import from_micros, to_micros

__all__ = ["Anchor", "read_anchor", "write_anchor"]

_FORMAT = "signoff-anchor-1"
_table = schema.audit_anchor


@dataclass(frozen=True, kw_only=True)
class Anchor:
    """The last pruned entry, and the signed checkpoint that covered it."""

    seq: int
    """The number of the last entry pruned: the log goes on from the next one."""
    hash: str
    """That entry's hash: the next entry's `prev_hash`."""
    checkpoint: str
    """The text of the signed checkpoint, of entry `seq` or a later one."""
    signature: str
    """HMAC-SHA256, with the audit key, of the rest."""
    at: datetime
    """When the entries were pruned."""

    @classmethod
    def made(
        cls, *, seq: int, hash: str, checkpoint: Checkpoint, key: bytes, at: datetime
    ) -> Anchor:
        body = _body(seq, hash, checkpoint.text())
        return cls(
            seq=seq,
            hash=hash,
            checkpoint=checkpoint.text(),
            signature=hmac.new(key, body.encode(), hashlib.sha256).hexdigest(),
            at=at,
        )

    def covering(self, key: bytes | None) -> Checkpoint:
        """The checkpoint the anchor was pruned behind, once the anchor's and the checkpoint's
        signatures check with `key`; `CheckpointError` says why they do not (no key either)."""
        if key is None:
            raise CheckpointError(
                f"the log was pruned up to entry {self.seq}: set {KEY_VARIABLE} to check the "
                "signed record of where it now starts"
            )
        expected = hmac.new(
            key, _body(self.seq, self.hash, self.checkpoint).encode(), hashlib.sha256
        )
        if not hmac.compare_digest(self.signature, expected.hexdigest()):
            raise CheckpointError(
                f"the record of the prune up to entry {self.seq} is not signed with "
                f"{KEY_VARIABLE}: it was altered or forged (or the key changed)"
            )
        checkpoint = Checkpoint.parse(self.checkpoint)
        checkpoint.check(key)
        if checkpoint.seq < self.seq:
            raise CheckpointError(
                f"the record of the prune up to entry {self.seq} names a checkpoint of entry "
                f"{checkpoint.seq}, before it"
            )
        return checkpoint


def read_anchor(connection: Connection) -> Anchor | None:
    """The anchor, if the log was ever pruned; `CheckpointError` for a row signoff could not
    have written (it is read, like the log, without trusting it)."""
    rows = connection.execute(select(_table).limit(2)).all()
    if not rows:
        return None
    if len(rows) > 1:
        raise CheckpointError("the record of the prune is duplicated: audit_anchor has two rows")
    [row] = rows
    texts = (row.hash, row.checkpoint, row.signature)
    if row.id != 1 or type(row.seq) is not int or row.seq < 1 or type(row.at) is not int:
        raise CheckpointError("the record of the prune is corrupt: its numbers are not numbers")
    if not all(isinstance(value, str) for value in texts):
        raise CheckpointError("the record of the prune is corrupt: its texts are not text")
    try:
        at = from_micros(row.at)
    except (ValueError, OverflowError):
        raise CheckpointError("the record of the prune is corrupt: its time is no time") from None
    return Anchor(
        seq=row.seq, hash=row.hash, checkpoint=row.checkpoint, signature=row.signature, at=at
    )


def write_anchor(connection: Connection, anchor: Anchor) -> None:
    """Replace the anchor, inside the caller's transaction (the prune's)."""
    connection.execute(delete(_table))
    connection.execute(
        insert(_table).values(
            id=1,
            seq=anchor.seq,
            hash=anchor.hash,
            checkpoint=anchor.checkpoint,
            signature=anchor.signature,
            at=to_micros(anchor.at),
        )
    )


def _body(seq: int, digest: str, checkpoint: str) -> str:
    return f"{_FORMAT}.{seq}.{digest}.{checkpoint}"
