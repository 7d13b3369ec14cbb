"""The tables, as SQLAlchemy Core. Times are integer microseconds since the epoch (UTC); JSON is
stored as canonical text, so SQLite and PostgreSQL hold byte-identical values and the audit chain
hashes the same bytes on both. Beside them, the one statement their writers share: a row's insert
that leaves a row of the same key as it is (`inserts_if_new`)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert

__all__ = [
    "approvals",
    "audit",
    "audit_anchor",
    "audit_head",
    "blobs",
    "ended_sessions",
    "events",
    "external_calls",
    "grants",
    "inserts_if_new",
    "ledger",
    "messages",
    "metadata",
    "notes",
    "outbox",
    "outbox_cursor",
    "pause_approvals",
    "pauses",
    "policy_versions",
    "runs",
    "schema_version",
    "subruns",
]

metadata = MetaData()

schema_version = Table(
    "signoff_schema",
    metadata,
    Column("version", Integer, nullable=False),
)

approvals = Table(
    "approvals",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("batch_id", String(40), nullable=False),
    Column("run_id", Text),
    Column("thread_id", Text),
    Column("origin", Text, nullable=False),
    Column("call_id", Text, nullable=False),
    Column("tool", Text, nullable=False),
    Column("server", Text),
    Column("agent", Text),
    Column("args", Text, nullable=False),
    Column("digest", String(64), nullable=False),
    Column("rule", Text),
    Column("reason", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("requested_at", BigInteger, nullable=False),
    Column("requested_by", Text),
    Column("expires_at", BigInteger),
    Column("approvers", Text, nullable=False),
    Column("forbid_self_approval", Boolean, nullable=False),
    Column("decided_by", Text),
    Column("decided_at", BigInteger),
    Column("decision", Text),
    Column("version", Integer, nullable=False),
    # Since version 4: what the asking rule said (a grant binds to it), and the arguments as
    # requested when an edit replaced them in `args`.
    Column("rule_digest", String(64)),
    Column("requested_args", Text),
    # Since version 8: what the call asks for (a tool run, a resource read, a prompt got).
    Column("kind", String(16), nullable=False, server_default="tool"),
    # Since version 11: the tool's argument schema as the asker knew it (edits are checked
    # against it in any process).
    Column("args_schema", Text),
    # Since version 12: whether the asking rule marks the call destructive (the inbox confirms).
    Column("destructive", Boolean, nullable=False, server_default=false()),
    # Since version 13: several people's approvals, escalation, a decision on timeout, and
    # assignment (JSON, but `escalated`, `next_escalation_at` and `assigned_to`, kept to query).
    Column("quorum", Text),
    Column("votes", Text),
    Column("escalate", Text),
    Column("escalated", Integer, nullable=False, server_default="0"),
    Column("next_escalation_at", BigInteger),
    Column("on_timeout", Text),
    Column("assigned", Text),
    Column("assigned_to", Text),
    # Since version 14: what the call would change, as its tool's preview computed it (JSON).
    Column("preview", Text),
    # Since version 18: the changes made while it waited, one per version (JSON), so a decision
    # sent on an older version is told what it did not see.
    Column("changes", Text),
    # And the version of the policy that judged it: a new version of that policy judges it
    # again (a policy of another lineage — a framework app's own — does not rule it).
    Column("policy", String(32)),
    # Listing is newest first, and ids are time-ordered: each index ends in `id` so a page is a
    # plain index range, never a sort of every matching row.
    Index("approvals_status_id", "status", "id"),
    Index("approvals_status_tool_id", "status", "tool", "id"),
    Index("approvals_status_agent_id", "status", "agent", "id"),
    Index("approvals_run_id", "run_id", "id"),
    Index("approvals_batch", "batch_id"),
    Index("approvals_expiry", "status", "expires_at"),
    Index("approvals_digest", "digest", "status"),
    Index("approvals_escalation", "status", "next_escalation_at"),
    Index("approvals_assigned", "status", "assigned_to", "id"),
)
# The insights' indexes, made by their migration only (`migrations._v15`): `approvals_window` on
# (requested_at, rule, tool, agent, status, decided_at, decided_by), `approvals_tool_window` on
# (tool, requested_at), and `audit_action_at` on `audit` (action, at).

grants = Table(
    "grants",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("tool", Text, nullable=False),
    Column("server", Text),
    Column("scope", String(16), nullable=False),
    Column("subject", Text),
    Column("args_digest", String(64)),
    Column("rule", Text),
    Column("approval_id", String(40)),
    Column("created_by", Text, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("revoked_by", Text),
    Column("revoked_at", BigInteger),
    # Since version 4: what its rule said, the granter's roles, and how often it was used.
    Column("rule_digest", String(64)),
    Column("roles", Text, nullable=False, server_default="[]"),
    Column("uses", BigInteger, nullable=False, server_default="0"),
    Column("last_used_at", BigInteger),
    # Since version 8: the kind of the calls it covers.
    Column("kind", String(16), nullable=False, server_default="tool"),
    # Since version 10: the agent whose tool it covers, and whose calls a run or thread grant
    # covers.
    Column("agent", Text),
    Column("requested_by", Text),
    Index("grants_tool", "tool", "revoked_at"),
)

audit = Table(
    "audit",
    metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("at", BigInteger, nullable=False),
    Column("actor", Text, nullable=False),
    Column("action", String(40), nullable=False),
    Column("subject", Text, nullable=False),
    Column("data", Text, nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
)

# One row: the last entry's sequence number and hash. Updating it in the same transaction as the
# insert serializes audit writers, so the chain never forks under concurrency.
audit_head = Table(
    "audit_head",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("seq", BigInteger, nullable=False),
    Column("hash", String(64), nullable=False),
)

audit_anchor = Table(
    "audit_anchor",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("seq", BigInteger, nullable=False),
    Column("hash", String(64), nullable=False),
    Column("checkpoint", Text, nullable=False),
    Column("signature", String(64), nullable=False),
    Column("at", BigInteger, nullable=False),
)
"""Since version 17: one row once the log's oldest entries were pruned — the last entry
removed (its number and hash, which the first kept entry's `prev_hash` names), the signed
checkpoint that covered it, and a signature binding the two (see `signoff.store.anchor`)."""

events = Table(
    "events",
    metadata,
    Column("run_id", String(40), primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("at", BigInteger, nullable=False),
    Column("type", String(40), nullable=False),
    Column("data", Text, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("thread_id", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("started_by", Text),
    Column("lease_owner", Text),
    Column("lease_until", BigInteger),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("version", Integer, nullable=False),
    # Since version 2: the last message's and event's numbers, bumped by each append, so an
    # append learns where to write from the update it makes anyway.
    Column("message_seq", BigInteger, nullable=False, server_default="0"),
    Column("event_seq", BigInteger, nullable=False, server_default="0"),
    Index("runs_thread", "thread_id"),
    Index("runs_status", "status"),
)

messages = Table(
    "messages",
    metadata,
    Column("run_id", String(40), primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("role", String(16), nullable=False),
    Column("data", Text, nullable=False),
    Column("blob", String(64)),
)

# Since version 2, `messages` has an index on (run_id, role, seq) and `events` ones on
# (run_id, type, seq) and (at, run_id, seq): resuming finds a run's last model turn without
# reading its history, and an inbox follows every run's events in time order. They are created
# by migration 2 only (declared here, migration 1 would build them too).

subruns = Table(
    "subruns",
    metadata,
    Column("run_id", String(40), primary_key=True),
    Column("parent_id", String(40), nullable=False),
    Column("parent_key", Text, nullable=False),  # the ledger key of the call the run answers
    UniqueConstraint("parent_id", "parent_key", name="subruns_parent"),
)

ledger = Table(
    "ledger",
    metadata,
    Column("key", Text, primary_key=True),
    Column("run_id", String(40), nullable=False),
    Column("call_id", Text, nullable=False),
    Column("tool", Text, nullable=False),
    Column("digest", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("result", Text),
    Column("started_at", BigInteger, nullable=False),
    Column("finished_at", BigInteger),
    # Since version 5: who runs the call and until when their claim holds (`Ledger.once`), so a
    # second caller can tell a call under way from one whose worker died.
    Column("owner", Text),
    Column("lease_until", BigInteger),
    # Since version 9: which claim of the key this is — 1 for the first, one more at each
    # takeover — so a worker whose claim was taken over can neither record its result over the
    # new holder's nor extend the new holder's lease (the owner alone cannot tell: the same
    # owner may claim a key twice).
    Column("fence", BigInteger, nullable=False, server_default="0"),
    Index("ledger_run", "run_id"),
)

blobs = Table(
    "blobs",
    metadata,
    Column("hash", String(64), primary_key=True),
    Column("codec", String(16), nullable=False),
    Column("data", LargeBinary, nullable=False),
)

policy_versions = Table(
    "policy_versions",
    metadata,
    Column("version", String(32), primary_key=True),
    Column("created_at", BigInteger, nullable=False),
    Column("created_by", Text, nullable=False),
    Column("document", Text, nullable=False),
)
# Made by its migration only (`migrations._v18`): `policy_versions_latest` on (created_at DESC,
# version), for the latest version every decision reads.

notes = Table(
    "notes",
    metadata,
    Column("channel", String(16), primary_key=True),
    Column("subject", String(200), primary_key=True),
    Column("key", String(200), primary_key=True),
    Column("at", BigInteger, nullable=False),
    Column("data", Text, nullable=False),
)
"""Since version 3: what a channel keeps about a subject of its own, beside the run log — the
messages an A2A client sent to a task, as it sent them. One row per (channel, subject, key)."""

external_calls = Table(
    "external_calls",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("origin", String(40), nullable=False),
    Column("thread_id", Text, nullable=False),
    Column("call_id", Text, nullable=False),
    Column("agent", Text),
    Column("digest", String(64), nullable=False),
    Column("kind", String(8), nullable=False),
    Column("rule", Text),
    Column("reason", Text, nullable=False),
    Column("approval_id", String(40)),
    Column("at", BigInteger, nullable=False),
)
"""Since version 5: every call of another framework's run the gate judged, by its key (a hash of
origin, external thread and call id): judged again — a re-run node, a retry, another replica —
it gets the same verdict and the same approval."""

pauses = Table(
    "pauses",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("origin", String(40), nullable=False),
    Column("thread_id", Text, nullable=False),
    Column("agent", Text),
    Column("status", String(16), nullable=False),
    Column("data", Text, nullable=False),
    Column("lease_owner", Text),
    Column("lease_until", BigInteger),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("pauses_waiting", "origin", "status", "updated_at"),
)
"""Since version 5: another framework's run paused on held calls, with what its integration
needs to resume it; a resumer claims it (lease) once every one of its approvals is decided."""

pause_approvals = Table(
    "pause_approvals",
    metadata,
    Column("pause_id", String(64), primary_key=True),
    Column("approval_id", String(40), primary_key=True),
    Index("pause_approvals_approval", "approval_id"),
)

external_history = Table(
    "external_history",
    metadata,
    Column("origin", String(40), primary_key=True),
    Column("thread_id", Text, primary_key=True),
    Column("seq", BigInteger, primary_key=True),
    Column("data", Text, nullable=False),
    Column("at", BigInteger, nullable=False),
)
"""Since version 6: the history of another framework's thread where the framework leaves it to
the app (Pydantic AI's messages), appended in order — each append a compare-and-set on the
length its writer read, so two resumers of one thread never both extend it."""

leases = Table(
    "leases",
    metadata,
    Column("name", String(40), primary_key=True),
    Column("owner", Text, nullable=False),
    Column("until", BigInteger, nullable=False),
)
"""Since version 16: who does a job meant for one replica at a time (``sweeper``: letting
approvals lapse, announcing escalations), and until when, by the database's clock."""

outbox_cursor = Table(
    "outbox_cursor",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("seq", BigInteger, nullable=False),
)
"""Since version 7: one row, the last audit entry the notifications have read. The audit log is
the outbox's source: every request, decision and unknown outcome is written there in the
transaction of the change, so no notification can be lost to a crash."""

outbox = Table(
    "outbox",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("sink", String(64), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("event", String(16), nullable=False),
    Column("subject", Text, nullable=False),
    Column("data", Text, nullable=False),
    Column("status", String(8), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_at", BigInteger, nullable=False),
    Column("lease_owner", Text),
    Column("lease_until", BigInteger),
    Column("error", Text),
    Column("created_at", BigInteger, nullable=False),
    Column("sent_at", BigInteger),
    UniqueConstraint("sink", "seq", name="outbox_sink_seq"),
    Index("outbox_due", "status", "next_at"),
)
"""Since version 7: one notification to send to one sink (a webhook, a Slack channel, a mail
list) for one audit entry; claimed by one sender at a time (a lease), retried until sent."""

ended_sessions = Table(
    "ended_sessions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("until", BigInteger, nullable=False),
    Index("ended_sessions_until", "until"),
)
"""Since version 19: the sign-in sessions that ended before their cookies expired (`until`): a
person signed out, and no replica takes the cookie again (see `signoff.store.sessions`)."""


def inserts_if_new(table: Table) -> dict[str, Insert]:
    """The insert of a row of `table` that does nothing when a row of the same key is there (its
    ``rowcount`` 0), by dialect name: ``postgresql`` and ``sqlite``."""
    return {
        name: dialect.insert(table).on_conflict_do_nothing()
        for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
    }
