"""Checking the audit log: each entry's hash and its link to the one before, the numbering,
the head row, and — given a checkpoint kept outside the database — that no entry up to the
checkpoint was removed or rewritten.

The answer is an `AuditReport` that names the first fault in words. Nothing stored can make the
check raise: `signoff.store.audit` reads every row without trusting it. Without a checkpoint the
check proves the log consistent with itself, not that its newest entries were never cut off
together with the head: a log cut short is consistent too.

A log whose oldest entries were pruned is checked from its anchor on (`signoff.store.anchor`):
the first kept entry must link to the hash the anchor keeps, the entry of the checkpoint it was
pruned behind must still be that checkpoint's, and the anchor's signature must check with
``SIGNOFF_AUDIT_KEY`` (without the key the report says the anchor went unchecked).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

from sqlalchemy.engine import Connection

from signoff.errors import CheckpointError
from signoff.store.anchor import Anchor, read_anchor
from signoff.store.audit import (
    GENESIS,
    Bounds,
    StoredEntry,
    next_seq,
    parse_data,
    read_bounds,
    read_entries,
)
from signoff.store.checkpoint import KEY_VARIABLE, Checkpoint, audit_key

__all__ = ["AuditReport", "verify_chain"]

T = TypeVar("T")
_HEX = re.compile(r"[0-9a-f]{64}")
_NO_CHECKPOINT = (
    "without a checkpoint, removal of the newest entries cannot be detected"
    " — see `signoff audit checkpoint`"
)


@dataclass(frozen=True, kw_only=True)
class AuditReport:
    """What checking the audit log found."""

    ok: bool
    entries: int
    """The number of the last entry found intact, from the log's start on (entry 1, or the
    one after the last pruned)."""
    first_bad: int | None
    """The number of the first entry found altered, missing, out of place, past the head or
    gone since the checkpoint; None when the log is intact, or when the fault is no entry's
    (the head row, a row numbered outside the log)."""
    reason: str
    """One line in words: what is wrong, or what was proven."""
    last_hash: str
    """When `ok`, the hash of entry `entries` (64 zeros for none): the head a checkpoint of
    this log records."""
    checkpoint: Checkpoint | None = None
    """The checkpoint the log was checked against, if any."""
    pruned: int = 0
    """How many of the oldest entries were pruned: the log is checked from the next one."""


class _Runs(Protocol):
    async def run(
        self,
        work: Callable[[Connection], T],
        *,
        write: bool = True,
        durable: bool = True,
        snapshot: bool = True,
    ) -> T: ...


async def verify_chain(
    store: _Runs, *, since: Checkpoint | None = None, batch: int = 5000
) -> AuditReport:
    """Check the log in transactions of `batch` entries, up to the head as it was first read:
    entries appended meanwhile are left for the next check, never mistaken for a fault. A prune
    that commits meanwhile makes the check start again, once, from the new anchor."""
    report = await _verify(store, since=since, batch=batch)
    if not report.ok:
        anchor = await store.run(_anchor, write=False)
        moved = anchor[0].seq if isinstance(anchor[0], Anchor) else 0
        if moved != report.pruned:
            report = await _verify(store, since=since, batch=batch)
    return report


async def _verify(store: _Runs, *, since: Checkpoint | None, batch: int) -> AuditReport:
    start, (anchor, anchor_fault) = await store.run(
        lambda c: (read_bounds(c), _anchor(c)), write=False
    )
    head_fault = _head_fault(start)
    end = start.head_seq if head_fault is None and start.head_seq is not None else start.last or 0
    walk = _Walk(since=since, end=end, head_fault=head_fault)
    walk.start(anchor, anchor_fault)
    lo = walk.expected - 1
    while walk.fault is None and lo < end:
        hi = min(lo + batch, end)
        walk.feed(await store.run(partial(read_entries, lo=lo, hi=hi), write=False))
        if walk.fault is None and walk.expected <= hi:
            walk.missing(await store.run(partial(next_seq, after=hi), write=False))
        lo = hi
    if walk.fault is None:
        walk.finish(start, await store.run(read_bounds, write=False))
    return walk.report()


def _anchor(connection: Connection) -> tuple[Anchor | None, str | None]:
    """The anchor, or what is wrong with its row."""
    try:
        return read_anchor(connection), None
    except CheckpointError as exc:
        return None, str(exc)


class _Walk:
    """The entries in order, until the first fault."""

    def __init__(self, *, since: Checkpoint | None, end: int, head_fault: str | None) -> None:
        self.since = since
        self.end = end
        self.head_fault = head_fault
        self.expected = 1
        self.prev = GENESIS
        self.fault: tuple[int | None, str] | None = None
        self.pruned = 0
        self.cover: Checkpoint | None = None
        """The checkpoint the log was pruned behind, its signature checked."""
        self.unchecked: int | None = None
        """The entry the log was pruned up to, when its anchor could not be checked (no key)."""

    def start(self, anchor: Anchor | None, fault: str | None) -> None:
        """Start after the pruned entries, if any: from the anchor, once it checks."""
        if fault is not None:
            self.fault = None, fault
            return
        if anchor is None:
            return
        self.pruned, self.expected, self.prev = anchor.seq, anchor.seq + 1, anchor.hash
        try:
            key = audit_key()
            if key is None:
                self.unchecked = anchor.seq
            else:
                self.cover = anchor.covering(key)
        except CheckpointError as exc:
            self.fault = None, f"the record of the prune is not to be trusted: {exc}"
            return
        cover = self.cover
        if cover is not None and cover.seq == anchor.seq and cover.hash != anchor.hash:
            mismatch = f"the record of the prune up to entry {anchor.seq} keeps a hash that is "
            self.fault = None, mismatch + "not the one of the checkpoint it was pruned behind"
            return
        self.fault = self._since_pruned()

    def _since_pruned(self) -> tuple[int | None, str] | None:
        """A checkpoint given of an entry that was pruned proves only what the anchor keeps."""
        since = self.since
        if since is None or since.seq == 0 or since.seq > self.pruned:
            return None
        if since.seq == self.pruned and since.hash == self.prev:
            return None
        return None, (
            f"the checkpoint of {_when(since)} names entry {since.seq}, which was pruned (the "
            f"log starts after entry {self.pruned} now): check against the checkpoint the log "
            "was pruned behind, or a later one"
        )

    def feed(self, rows: Sequence[StoredEntry]) -> None:
        for row in rows:
            self.fault = self._check(row)
            if self.fault is not None:
                return
            self.prev, self.expected = row.hash, row.seq + 1

    def _check(self, row: StoredEntry) -> tuple[int | None, str] | None:
        seq = self.expected
        if row.seq < seq:
            return row.seq, f"entry {row.seq} appears twice"
        if row.seq > seq:
            return seq, _jump(seq, row.seq, self.pruned)
        if row.flaw is not None:
            return seq, f"entry {seq} is corrupt: {row.flaw}"
        if row.content_hash() != row.hash:
            _, problem = parse_data(row.data)
            detail = f"; {problem}" if problem else ""
            return (
                seq,
                f"entry {seq} was altered or moved: its content does not match its hash{detail}",
            )
        if row.prev_hash != self.prev:
            if seq == 1:
                return 1, "entry 1 does not start the chain: its prev_hash is not 64 zeros"
            if seq == self.pruned + 1:
                return seq, (
                    f"entry {seq} does not follow the pruned entries: its prev_hash is not the "
                    f"hash of entry {self.pruned} that the record of the prune keeps"
                )
            return seq - 1, (
                f"entry {seq - 1} was rewritten, or entry {seq} was put after it: "
                f"entry {seq}'s prev_hash is not entry {seq - 1}'s hash"
            )
        if self.since is not None and seq == self.since.seq and row.hash != self.since.hash:
            return seq, (
                f"entry {seq} is not the one in the checkpoint of {_when(self.since)}: the log "
                "was rewritten at or before it, or the checkpoint is of another database"
            )
        if self.cover is not None and seq == self.cover.seq and row.hash != self.cover.hash:
            return seq, (
                f"entry {seq} is not the one in the checkpoint of {_when(self.cover)} that the "
                "log was pruned behind: the log was rewritten at or before it"
            )
        return None

    def missing(self, following: int | None) -> None:
        """No entry numbered `expected` up to the end of the batch; `following` is the next."""
        seq = self.expected
        if following is not None:
            self.fault = seq, _jump(seq, following, self.pruned)
            return
        ends = f"it ends at entry {seq - 1}" if seq > 1 else "it is empty"
        if self.head_fault is None:
            says = f"the head says the log has {self.end} entries, but {ends}"
        else:
            says = f"the log should go on to entry {self.end}, but {ends}"
        self.fault = seq, f"entry {seq} is missing: {says}"

    def finish(self, start: Bounds, now: Bounds) -> None:
        """Every entry up to the head is intact: check what lies around them."""
        self.fault = self._around(start, now)

    def _around(self, start: Bounds, now: Bounds) -> tuple[int | None, str] | None:
        head = now.head_seq if self.head_fault is None and _head_fault(now) is None else None
        if head is not None and now.last is not None and now.last > head:
            return head + 1, (
                f"entry {head + 1} is past the head: the head says the log has {head} entries, "
                "so it was moved back (or entries were added after it)"
            )
        if self.head_fault is None and start.head_hash != self.prev:
            if self.end == 0:
                return None, "the head row was altered: the log is empty but its hash is not zeros"
            return self.end, (
                f"entry {self.end} was rewritten, or the head row was: "
                f"the head's hash is not entry {self.end}'s hash"
            )
        for kept in (self.since, self.cover):
            if kept is not None and kept.seq > self.end:
                return self._gone(kept)
        if now.first is not None and 1 <= now.first <= self.pruned:
            return now.first, (
                f"entry {now.first} is back: the log was pruned up to entry {self.pruned}"
            )
        if now.stray is not None:
            return None, f"the audit table has a row numbered {now.stray}, which is no entry number"
        if now.first is not None and now.first < 1:
            return None, (
                f"the audit table has a row numbered {now.first}; entries are numbered from 1"
            )
        if self.head_fault is not None:
            return None, self.head_fault
        return None

    def _gone(self, kept: Checkpoint) -> tuple[int, str]:
        seq = self.end + 1
        has = f"{self.end}" if self.end else "none"
        return seq, (
            f"entry {seq} is gone: the checkpoint of {_when(kept)} says the log had "
            f"{kept.seq} entries; it now has {has}"
        )

    def report(self) -> AuditReport:
        if self.fault is not None:
            first_bad, reason = self.fault
            entries = self.expected - 1 if first_bad is None else min(first_bad - 1, self.end)
            return AuditReport(
                ok=False,
                entries=max(entries, 0),
                first_bad=first_bad,
                reason=reason,
                last_hash=self.prev,
                checkpoint=self.since,
                pruned=self.pruned,
            )
        entries = self.expected - 1
        intact = f"chain intact ({self._kept(entries)})"
        if self.since is None:
            reason = f"{intact}; {_NO_CHECKPOINT}"
        elif self.since.seq == 0:
            reason = f"{intact}; the checkpoint of {_when(self.since)} was of an empty log"
        elif self.since.seq <= self.pruned:
            reason = (
                f"{intact}, and entry {self.since.seq}, where the log was pruned, is the one "
                f"of the checkpoint of {_when(self.since)}"
            )
        else:
            first = self.pruned + 1
            reason = (
                f"{intact}, and entries {first} to {self.since.seq} are those "
                f"of the checkpoint of {_when(self.since)}"
            )
        if self.unchecked is not None:
            # Entries cut off the start with a record of a prune written in: without the key
            # nothing tells that from a prune, so the log is not said to be intact.
            reason = (
                f"cannot tell whether the log is intact: it starts after a prune up to entry "
                f"{self.unchecked}, whose signed record only {KEY_VARIABLE} can check, and it "
                f"is not set here (from there on: {reason})"
            )
        return AuditReport(
            ok=self.unchecked is None,
            entries=entries,
            first_bad=None,
            reason=reason,
            last_hash=self.prev,
            checkpoint=self.since,
            pruned=self.pruned,
        )

    def _kept(self, entries: int) -> str:
        """How many entries were checked, and how many pruned before them."""
        if not self.pruned:
            return _count(entries)
        behind = "" if self.cover is None else f" behind the checkpoint of {_when(self.cover)}"
        if entries == self.pruned:
            return f"no entries after entry {self.pruned}; 1 to {self.pruned} pruned{behind}"
        return f"entries {self.pruned + 1} to {entries}; 1 to {self.pruned} pruned{behind}"


def _head_fault(bounds: Bounds) -> str | None:
    if bounds.head_rows == 0:
        return "the head row is missing: audit_head is empty"
    if bounds.head_rows > 1:
        return (
            f"the head row is duplicated: audit_head has {bounds.head_rows} rows, "
            "where signoff keeps one"
        )
    if bounds.head_id != 1:
        return "the head row was altered: its id is not 1"
    if bounds.head_seq is None or bounds.head_seq < 0:
        return f"the head row is corrupt: its entry count is {bounds.head_seq_stored}"
    if bounds.head_hash is None or not _HEX.fullmatch(bounds.head_hash):
        return "the head row is corrupt: its hash is not 64 hex digits"
    return None


def _jump(seq: int, following: int, pruned: int = 0) -> str:
    if seq == 1:
        return f"entry 1 is missing: the log starts at entry {following}"
    if seq == pruned + 1:
        return (
            f"entry {seq} is missing: the log was pruned up to entry {pruned}, "
            f"but starts at entry {following}"
        )
    return f"entry {seq} is missing: the entries jump from {seq - 1} to {following}"


def _when(checkpoint: Checkpoint) -> str:
    return checkpoint.at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _count(entries: int) -> str:
    return "1 entry" if entries == 1 else f"{entries} entries"
