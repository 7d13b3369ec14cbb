"""Small histories with one lesson each, asked by `tests.history.POLICY`: many calls approved
and one a person refused that a careless suggestion would allow, or a flood of approvals from
one voice.

Each is a list of rows of the `approvals` table, written with `tests.history.write_rows`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from signoff.store.times import to_micros
from tests.history import approval_row

__all__ = [
    "SHADOW",
    "SMUGGLED",
    "edited_into_the_folder",
    "mail_and_a_smuggled_address",
    "mail_nearly_always_approved",
    "one_approver",
    "one_rejecter",
    "one_requester",
    "signoff_on_timeout",
    "tmp_files_and_a_traversal",
    "tmp_files_and_refusals_deeper",
]

SHADOW = "/tmp/../etc/shadow"
"""A path under ``/tmp/`` to the glob ``/tmp/*``, and a person rejected it."""
SMUGGLED = "attacker@evil.test, boss@example.com"
"""Two addresses, the last at ``example.com``, and a person rejected it."""

_PEOPLE = ("alice", "bob", "carol")
_REQUESTERS = ("agent-runner", "nightly", "ann")


def tmp_files_and_a_traversal(now: datetime) -> list[dict[str, Any]]:
    """50 deletes of ``/tmp/cache-N`` approved unchanged, then one of `SHADOW` rejected."""
    approved = [_delete(f"/tmp/cache-{n}") for n in range(50)]
    return _rows(now, [*approved, _delete(SHADOW, status="rejected")])


def mail_and_a_smuggled_address(now: datetime) -> list[dict[str, Any]]:
    """50 mails to ``userN@example.com`` approved unchanged, then one to `SMUGGLED` rejected
    (each with a subject of its own: the address is what they share)."""
    approved = [_mail(f"user{n}@example.com", f"Report {n}") for n in range(50)]
    return _rows(now, [*approved, _mail(SMUGGLED, "Report 50", status="rejected")])


def mail_nearly_always_approved(now: datetime) -> list[dict[str, Any]]:
    """22 mails to ``userN@example.com`` approved unchanged and one rejected: 95.7%, short of
    the 98% an allow needs."""
    approved = [_mail(f"user{n}@example.com", f"Report {n}") for n in range(22)]
    return _rows(now, [*approved, _mail("user22@example.com", "Report 22", status="rejected")])


def edited_into_the_folder(now: datetime) -> list[dict[str, Any]]:
    """60 deletes of ``/tmp/cache-N`` approved unchanged; one of ``/tmp/keep-me`` a person
    edited to another file before approving it."""
    approved = [_delete(f"/tmp/cache-{n}") for n in range(60)]
    edited = _delete("/tmp/cache-old", status="edited") | {
        "requested_args": {"path": "/tmp/keep-me"}
    }
    return _rows(now, [*approved, edited])


def one_approver(now: datetime) -> list[dict[str, Any]]:
    """50 deletes of ``/tmp/cache-N`` by three requesters, every one approved by alice."""
    return _rows(now, [_delete(f"/tmp/cache-{n}") for n in range(50)], people=("alice",))


def one_requester(now: datetime) -> list[dict[str, Any]]:
    """50 deletes of ``/tmp/cache-N`` approved by three people, every one requested by ann."""
    return _rows(now, [_delete(f"/tmp/cache-{n}") for n in range(50)], requesters=("ann",))


def signoff_on_timeout(now: datetime) -> list[dict[str, Any]]:
    """50 deletes of ``/tmp/cache-N`` approved by signoff itself (nobody decided in time, and
    the rule approves on timeout), by three requesters; and one approved by each of two
    people."""
    automatic = _rows(now, [_delete(f"/tmp/cache-{n}") for n in range(50)], people=("signoff",))
    people = _rows(now, [_delete(f"/tmp/cache-{n}") for n in (50, 51)], people=("alice", "bob"))
    return automatic + [row | {"id": f"p{row['id']}"} for row in people]


def one_rejecter(now: datetime) -> list[dict[str, Any]]:
    """30 deletes of ``/srv/data/N.csv`` by three requesters, every one rejected by alice."""
    calls = [_delete(f"/srv/data/{n}.csv", status="rejected") for n in range(30)]
    return _rows(now, calls, people=("alice",))


def tmp_files_and_refusals_deeper(now: datetime, refusals: int) -> list[dict[str, Any]]:
    """50 deletes of ``/tmp/cache-N`` approved unchanged, then `refusals` of
    ``/tmp/keep/N`` rejected: under ``/tmp/``, not directly in it."""
    approved = [_delete(f"/tmp/cache-{n}") for n in range(50)]
    rejected = [_delete(f"/tmp/keep/{n}", status="rejected") for n in range(refusals)]
    return _rows(now, [*approved, *rejected])


def _delete(path: str, *, status: str = "approved") -> dict[str, Any]:
    return {"tool": "delete_file", "rule": "rules[1]", "agent": "ops", "args": {"path": path},
            "status": status}  # fmt: skip


def _mail(to: str, subject: str, *, status: str = "approved") -> dict[str, Any]:
    return {"tool": "send_email", "rule": "tools.send_email", "agent": "mailer",
            "args": {"to": to, "subject": subject}, "status": status}  # fmt: skip


def _rows(
    now: datetime,
    calls: Sequence[dict[str, Any]],
    *,
    people: Sequence[str] = _PEOPLE,
    requesters: Sequence[str] = _REQUESTERS,
) -> list[dict[str, Any]]:
    """The calls asked a minute apart up to `now`, decided by `people` and requested by
    `requesters` in turn."""
    start = now - timedelta(minutes=len(calls))
    return [
        approval_row(
            i,
            requested_at=to_micros(start + timedelta(minutes=i)),
            decided_by=people[i % len(people)],
            requested_by=requesters[i % len(requesters)],
            decision=_decision(call),
            **call,
        )
        for i, call in enumerate(calls)
    ]


def _decision(call: dict[str, Any]) -> dict[str, Any]:
    match call["status"]:
        case "approved":
            return {"kind": "approve"}
        case "edited":
            return {"kind": "edit", "args": call["args"]}
        case _:
            return {"kind": "reject", "reason": "no"}
