"""Grants in the Gate: the standing approvals an "approve always" leaves, as they stand now — a
grant is judged by its granter's roles at the moment of use (the directory, `roles_of`), and one
whose granter is gone lets nothing through — listed, and revoked on the record."""

from __future__ import annotations

from dataclasses import replace

from signoff.gate.base import GateBase
from signoff.store import AuditRecord
from signoff.types import Grant

__all__ = ["Grants"]


class Grants(GateBase):
    """The Gate's grants (the Gate is one)."""

    async def grants(self, *, tool: str | None = None) -> list[Grant]:
        """The grants in force, oldest first."""
        return await self.store.list_grants(tool=tool)

    def grant_now(self, grant: Grant) -> Grant | None:
        """`grant` with its granter's roles as the directory (`roles_of`) says they are now,
        or None when the directory no longer knows the granter: it lets nothing through.
        Without a directory, the grant as stored."""
        if self.roles_of is None:
            return grant
        roles = self.roles_of(grant.created_by)
        if roles is None:
            return None
        return replace(grant, roles=tuple(sorted(roles)))

    def grant_inactive(self, grant: Grant) -> str | None:
        """Why `grant` lets no call through now, whatever the call, on account of its granter:
        no longer known to the directory, or without any of the roles its rule needs now;
        None when its granter could still approve what it covers (or it is revoked, or its
        rule gone from the policy: `grant_to_dict` says those)."""
        current = self.grant_now(grant)
        if current is None:
            return f"its granter {grant.created_by!r} is no longer a known principal"
        needed = self.engine.approvers(grant.rule_digest)
        if needed and not set(current.roles) & set(needed):
            return (
                f"its granter {grant.created_by!r} no longer has any of the roles "
                f"{list(needed)!r} its rule needs"
            )
        return None

    async def revoke_grant(self, grant_id: str, *, actor: str) -> None:
        now = await self.time()
        record = AuditRecord(actor=actor, action="revoke", subject=grant_id, at=now)
        await self.store.revoke_grant(grant_id, actor=actor, at=now, audit=[record])
