"""Policy versions: every policy saved, the latest one what every replica follows. Saving takes
its turn behind the audit head and is stamped with the database's time, so the latest saved is
the last to commit whichever replica's clock runs ahead.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Protocol, cast

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from signoff.errors import ConflictError
from signoff.store import schema
from signoff.store.audit import LOCK_AUDIT_HEAD, append_audit
from signoff.store.decisions import read_clock
from signoff.store.records import AuditRecord
from signoff.store.runner import Transactional
from signoff.store.times import to_micros
from signoff.types import canonical_json

__all__ = ["PolicyStore"]

_LATEST_POLICY = (
    select(schema.policy_versions.c.version)
    .order_by(schema.policy_versions.c.created_at.desc(), schema.policy_versions.c.version)
    .limit(1)
)


class PolicyStore(Transactional, Protocol):
    """The policy versions' half of the store."""

    async def save_policy(
        self,
        version: str,
        document: dict[str, Any],
        *,
        actor: str,
        at: datetime,
        audit: Sequence[AuditRecord] = (),
        replaces: str | None = None,
    ) -> None:
        """Make `document` (whose policy has `version`) the latest policy, with its audit
        entries, in one transaction; a version seen before becomes the latest again. With
        `replaces`, only if that is still the latest version (`ConflictError` otherwise): a
        change made from a copy of it loses nothing made meanwhile, on any replica. Policy
        writers take turns, and each is stamped with the database's time once it has its turn
        (`at` on SQLite, this machine's): the latest saved is the last to commit, whichever
        replica's clock runs ahead."""
        table = schema.policy_versions
        values = {
            "version": version,
            "created_at": to_micros(at),
            "created_by": actor,
            "document": canonical_json(document).decode(),
        }

        def work(connection: Connection) -> None:
            connection.execute(LOCK_AUDIT_HEAD).one()  # policy writers take turns
            if connection.dialect.name == "postgresql":
                values["created_at"] = to_micros(read_clock(connection))
            if replaces is not None:
                latest = connection.execute(_LATEST_POLICY).scalar()
                if latest is not None and latest != replaces:
                    raise ConflictError(
                        f"the policy changed (it is version {latest} now, not {replaces}): "
                        "reload it and make the change again"
                    )
            dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
            statement = dialect.insert(table).values(values)
            connection.execute(
                statement.on_conflict_do_update(
                    index_elements=[table.c.version],
                    set_={"created_at": values["created_at"], "created_by": actor},
                )
            )
            append_audit(connection, audit)

        await self.run(work)

    async def known_policy(self, version: str) -> bool:
        """Whether a policy of this version was ever saved."""
        table = schema.policy_versions
        query = select(table.c.version).where(table.c.version == version)
        found = await self.run(lambda c: c.execute(query).first(), write=False)
        return found is not None

    async def saved_policies(self, versions: Collection[str]) -> frozenset[str]:
        """Which of `versions` are of a policy saved here (a server's lineage)."""
        if not versions:
            return frozenset()
        table = schema.policy_versions
        query = select(table.c.version).where(table.c.version.in_(sorted(versions)))
        found = await self.run(lambda c: c.execute(query).scalars().all(), write=False)
        return frozenset(found)

    async def latest_policy_version(self) -> str | None:
        """The version of the latest saved policy, if any: what a replica compares with its
        own before it reads the whole document."""
        found = await self.run(lambda c: c.execute(_LATEST_POLICY).scalar(), write=False)
        return cast(str | None, found)

    async def latest_policy(self) -> tuple[str, dict[str, Any]] | None:
        """The version and document of the latest saved policy, if any."""
        table = schema.policy_versions
        query = (
            select(table.c.version, table.c.document)
            .order_by(table.c.created_at.desc(), table.c.version)
            .limit(1)
        )
        row = await self.run(lambda c: c.execute(query).first(), write=False)
        return None if row is None else (row.version, json.loads(row.document))
