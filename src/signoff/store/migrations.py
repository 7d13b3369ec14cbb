"""Append-only migrations: ``MIGRATIONS[i]`` takes the schema from version ``i`` to ``i + 1``.

Never edit a migration that has shipped; add one. Migration 1 builds the tables of `schema` as
they stand at version 1: when a later migration changes one of them, freeze its version-1
definition here first, so that migrating from empty still replays history exactly.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    Column,
    Connection,
    Index,
    MetaData,
    Table,
    insert,
    inspect,
    select,
    text,
    update,
)

from signoff.errors import StoreError
from signoff.names import assignee_key
from signoff.store import schema

__all__ = ["LATEST", "MIGRATIONS", "migrate", "schema_version"]


_V1_TABLES = frozenset(
    {
        "approvals",
        "audit",
        "audit_head",
        "blobs",
        "events",
        "grants",
        "ledger",
        "messages",
        "policy_versions",
        "runs",
    }
)


# The tables a later migration changed, as version 1 built them: each with its columns through
# the one named here — the later ones were added at the end, as ``ALTER TABLE … ADD COLUMN``
# adds them — and the indexes over those. The rest of version 1's tables are `schema`'s as they
# stand. tests/store pins the statements version 1 makes: a column that shipped is never edited.
_V1_LAST_COLUMN = {
    "runs": "version",
    "approvals": "version",
    "grants": "revoked_at",
    "ledger": "finished_at",
}


def _as_version_1(table: Table) -> Table:
    """`table` as migration 1 built it (see `_V1_LAST_COLUMN`)."""
    names = [column.name for column in table.columns]
    kept = names[: names.index(_V1_LAST_COLUMN[table.name]) + 1]
    columns = [
        Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
        for c in (table.c[name] for name in kept)
    ]
    indexes = [
        Index(index.name, *(c.name for c in index.columns))
        for index in table.indexes
        if all(c.name in kept for c in index.columns)
    ]
    return Table(table.name, MetaData(), *columns, *indexes)


def version_1_tables() -> list[Table]:
    """The tables migration 1 creates, as it creates them."""
    return [
        _as_version_1(table) if table.name in _V1_LAST_COLUMN else table
        for table in schema.metadata.sorted_tables
        if table.name in _V1_TABLES
    ]


def _v1(connection: Connection) -> None:
    for table in version_1_tables():
        table.create(connection)
    connection.execute(insert(schema.audit_head).values(id=1, seq=0, hash="0" * 64))


def _v2(connection: Connection) -> None:
    """Sub-agents' runs linked to their parent's call; a run's last turn found by index; each
    run's message and event numbers kept on the run; every run's events in time order."""
    schema.subruns.create(connection)
    connection.execute(text("CREATE INDEX messages_by_role ON messages (run_id, role, seq)"))
    connection.execute(text("CREATE INDEX events_by_type ON events (run_id, type, seq)"))
    connection.execute(text("CREATE INDEX events_by_time ON events (at, run_id, seq)"))
    for column, table in (("message_seq", "messages"), ("event_seq", "events")):
        connection.execute(text(f"ALTER TABLE runs ADD COLUMN {column} BIGINT NOT NULL DEFAULT 0"))
        connection.execute(
            text(
                f"UPDATE runs SET {column} = (SELECT coalesce(max(seq), 0) FROM {table} "
                f"WHERE {table}.run_id = runs.id)"
            )
        )


def _v3(connection: Connection) -> None:
    """Channels' notes about their own subjects (an A2A task's messages as received)."""
    schema.notes.create(connection)


def _v4(connection: Connection) -> None:
    """Grants bound to what their rule says and to their granter's roles, and counted; an
    approval keeps what its rule said and the arguments it was requested with."""
    for statement in (
        "ALTER TABLE approvals ADD COLUMN rule_digest VARCHAR(64)",
        "ALTER TABLE approvals ADD COLUMN requested_args TEXT",
        "ALTER TABLE grants ADD COLUMN rule_digest VARCHAR(64)",
        "ALTER TABLE grants ADD COLUMN roles TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE grants ADD COLUMN uses BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE grants ADD COLUMN last_used_at BIGINT",
    ):
        connection.execute(text(statement))


def _v5(connection: Connection) -> None:
    """Other frameworks' runs: their judged calls by key, their pauses, and a ledger entry's
    owner and lease (`Ledger.once`)."""
    for table in (schema.external_calls, schema.pauses, schema.pause_approvals):
        table.create(connection)
    connection.execute(text("ALTER TABLE ledger ADD COLUMN owner TEXT"))
    connection.execute(text("ALTER TABLE ledger ADD COLUMN lease_until BIGINT"))


def _v6(connection: Connection) -> None:
    """The histories of other frameworks' threads that signoff keeps (Pydantic AI)."""
    schema.external_history.create(connection)


def _v7(connection: Connection) -> None:
    """The notifications' outbox: the audit entry they have read up to, and each delivery."""
    schema.outbox_cursor.create(connection)
    schema.outbox.create(connection)


def _v8(connection: Connection) -> None:
    """What a held call asks for, and what a grant covers: a tool run (every earlier one), an
    MCP resource read or an MCP prompt got."""
    for table in ("approvals", "grants"):
        connection.execute(
            text(f"ALTER TABLE {table} ADD COLUMN kind VARCHAR(16) NOT NULL DEFAULT 'tool'")
        )


def _v9(connection: Connection) -> None:
    """A fencing token on each ledger claim: a worker whose claim was taken over records nothing
    (`Ledger.claim`). Claims made before it hold token 0, which no new claim takes."""
    connection.execute(text("ALTER TABLE ledger ADD COLUMN fence BIGINT NOT NULL DEFAULT 0"))


def _v10(connection: Connection) -> None:
    """A grant bound to the agent whose tool it covers and, for a run or thread grant, to the
    requester of the approved call: both read from the approval each grant came from (a grant
    whose approval is gone keeps neither, and covers only calls that name no agent)."""
    for column in ("agent", "requested_by"):
        connection.execute(text(f"ALTER TABLE grants ADD COLUMN {column} TEXT"))
        connection.execute(
            text(
                f"UPDATE grants SET {column} = (SELECT approvals.{column} FROM approvals "
                "WHERE approvals.id = grants.approval_id)"
            )
        )


def _v11(connection: Connection) -> None:
    """A held call's tool schema, kept with its approval: an edit decided in any process (the
    server's inbox, the CLI) is checked against the schema the asker knew."""
    connection.execute(text("ALTER TABLE approvals ADD COLUMN args_schema TEXT"))


def _v12(connection: Connection) -> None:
    """Whether the rule that asked marks a held call destructive: the web inbox asks for a
    confirmation before approving it. Calls held before it are not."""
    connection.execute(
        text("ALTER TABLE approvals ADD COLUMN destructive BOOLEAN NOT NULL DEFAULT false")
    )


def _v13(connection: Connection) -> None:
    """Beyond one person's yes or no: how many people must approve a held call and who has
    (`quorum`, `votes`), whom it escalates to as time passes (`escalate`, how many steps were
    announced, and when the next comes), what signoff decides when nobody does in time
    (`on_timeout`), and whom it was handed to (`assigned`, and its `assigned_to` for the
    "assigned to me" view). Calls held before it have none of these."""
    for column in ("quorum", "votes", "escalate", "on_timeout", "assigned", "assigned_to"):
        connection.execute(text(f"ALTER TABLE approvals ADD COLUMN {column} TEXT"))
    connection.execute(
        text("ALTER TABLE approvals ADD COLUMN escalated INTEGER NOT NULL DEFAULT 0")
    )
    connection.execute(text("ALTER TABLE approvals ADD COLUMN next_escalation_at BIGINT"))
    connection.execute(
        text("CREATE INDEX approvals_escalation ON approvals (status, next_escalation_at)")
    )
    connection.execute(
        text("CREATE INDEX approvals_assigned ON approvals (status, assigned_to, id)")
    )


def _v14(connection: Connection) -> None:
    """What a held call would change, as its tool's preview computed it when it was held.
    Calls held before it have none."""
    connection.execute(text("ALTER TABLE approvals ADD COLUMN preview TEXT"))


def _v15(connection: Connection) -> None:
    """Insights over a window of decisions: the approvals asked in a time range, read from an
    index that holds every column the aggregates group and count (no table row is visited),
    one tool's calls in a time range, and the grant uses in a time range."""
    for statement in (
        "CREATE INDEX approvals_window ON approvals "
        "(requested_at, rule, tool, agent, status, decided_at, decided_by)",
        "CREATE INDEX approvals_tool_window ON approvals (tool, requested_at)",
        "CREATE INDEX audit_action_at ON audit (action, at)",
    ):
        connection.execute(text(statement))


def _v16(connection: Connection) -> None:
    """Leases on jobs meant for one replica at a time (the sweeper of due approvals)."""
    connection.execute(
        text(
            "CREATE TABLE leases (name VARCHAR(40) PRIMARY KEY, owner TEXT NOT NULL, "
            "until BIGINT NOT NULL)"
        )
    )


def _v17(connection: Connection) -> None:
    """Retention: where the audit log starts once its oldest entries are pruned, and the signed
    checkpoint that lets the rest of the chain be proven from there."""
    connection.execute(
        text(
            "CREATE TABLE audit_anchor (id INTEGER PRIMARY KEY, seq BIGINT NOT NULL, "
            "hash VARCHAR(64) NOT NULL, checkpoint TEXT NOT NULL, "
            "signature VARCHAR(64) NOT NULL, at BIGINT NOT NULL)"
        )
    )


def _v18(connection: Connection) -> None:
    """What changed a pending approval, version by version (an edit with the arguments it
    changed, a vote, an assignment, an escalation, a new policy's rule): a decision sent on an
    older version is refused, naming them; and the version of the policy that judged it (a new
    version of that policy judges it again). Approvals held before it have neither. And the policy
    saved last found by an index: every decision reads it (to be judged by it)."""
    connection.execute(text("ALTER TABLE approvals ADD COLUMN changes TEXT"))
    connection.execute(text("ALTER TABLE approvals ADD COLUMN policy VARCHAR(32)"))
    connection.execute(
        text("CREATE INDEX policy_versions_latest ON policy_versions (created_at DESC, version)")
    )


def _v19(connection: Connection) -> None:
    """Sign-in sessions that ended (a person signed out: their cookie works on no replica
    again). And assignments found by the key of the name they were handed to (one person, one
    name: an approval handed to 'Mallory' is in mallory's "assigned to me")."""
    connection.execute(
        text("CREATE TABLE ended_sessions (id VARCHAR(64) PRIMARY KEY, until BIGINT NOT NULL)")
    )
    connection.execute(text("CREATE INDEX ended_sessions_until ON ended_sessions (until)"))
    assigned = connection.execute(
        text("SELECT id, assigned_to FROM approvals WHERE assigned_to IS NOT NULL")
    ).all()
    for approval_id, to in assigned:
        if assignee_key(to) != to:
            connection.execute(
                text("UPDATE approvals SET assigned_to = :key WHERE id = :id"),
                {"key": assignee_key(to), "id": approval_id},
            )


MIGRATIONS: list[Callable[[Connection], None]] = [
    _v1,
    _v2,
    _v3,
    _v4,
    _v5,
    _v6,
    _v7,
    _v8,
    _v9,
    _v10,
    _v11,
    _v12,
    _v13,
    _v14,
    _v15,
    _v16,
    _v17,
    _v18,
    _v19,
]
LATEST = len(MIGRATIONS)


def schema_version(connection: Connection) -> int | None:
    """The schema version the database is at, or None when it has no signoff schema."""
    if not inspect(connection).has_table(schema.schema_version.name):
        return None
    return connection.execute(select(schema.schema_version.c.version)).scalar()


def migrate(connection: Connection, *, target: int = LATEST) -> int:
    """Bring the database to `target`, inside the caller's transaction; return the old version."""
    schema.schema_version.create(connection, checkfirst=True)
    current = connection.execute(select(schema.schema_version.c.version)).scalar()
    if current is None:
        connection.execute(insert(schema.schema_version).values(version=0))
        current = 0
    if current > LATEST:
        raise StoreError(
            f"the database is at schema version {current}, newer than this signoff ({LATEST}); "
            "upgrade signoff"
        )
    for version in range(current, target):
        MIGRATIONS[version](connection)
        connection.execute(update(schema.schema_version).values(version=version + 1))
    return current
