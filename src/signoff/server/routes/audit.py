"""The audit log: its entries in order, and the check of its chain (since a signed checkpoint,
to know no entry up to it was removed or rewritten)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from signoff.server.auth import Who
from signoff.server.routes.depends import Served
from signoff.server.shapes import MAX_SEQ, iso, shown
from signoff.store.checkpoint import Checkpoint, audit_key

__all__ = ["router"]

_DIGESTS = frozenset({"digest", "decided_digest", "args_digest"})
"""Audit data that hashes a call's arguments."""

router = APIRouter()


@router.get("/v1/audit")
async def audit(
    _: Who,
    service: Served,
    after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """Entries in order after `after`; `length` is the log's. With redaction configured,
    the calls' digests and the entries' hashes are left out: they are hashes of the
    arguments, and a guessable secret could be found from them. A damaged entry comes with
    `problem` saying what is wrong, and whatever of it cannot be shown left out."""
    entries = await service.store.audit_log(after=after, limit=limit)
    hide = bool(service.redaction)
    return {
        "length": await service.store.audit_length(),
        "items": [
            {
                "seq": e.seq,
                "at": None if e.at is None else iso(e.at),
                "actor": e.actor,
                "action": e.action,
                "subject": e.subject,
                "data": {
                    k: v
                    for k, v in shown(e.data, service.redaction).items()
                    if not hide or k not in _DIGESTS
                },
                "hash": None if hide else e.hash,
                "problem": e.problem,
            }
            for e in entries
        ],
        "next": entries[-1].seq if len(entries) == limit else None,
    }


@router.get("/v1/audit/verify")
async def verify(_: Who, service: Served, since: str | None = None) -> dict[str, Any]:
    """Check the chain; with `since` (a checkpoint from ``signoff audit checkpoint``,
    signed with this server's ``SIGNOFF_AUDIT_KEY``) also that no entry up to it was
    removed or rewritten. A checkpoint that is not one, or is forged, is a 400."""
    checkpoint = None
    if since is not None:
        checkpoint = Checkpoint.parse(since)
        checkpoint.check(audit_key())
    report = await service.store.verify_audit(since=checkpoint)
    return {
        "ok": report.ok,
        "entries": report.entries,
        "first_bad_entry": report.first_bad,
        "reason": report.reason,
        "checkpoint": None
        if checkpoint is None
        else {"entries": checkpoint.seq, "at": iso(checkpoint.at), "signed": checkpoint.signed},
    }
