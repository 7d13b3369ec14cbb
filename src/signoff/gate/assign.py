"""Handing a held call to someone in the Gate: who may decide an approval now, and an approval
assigned to a person or a role by someone who may decide it, to someone who may too — as far as
the gate's directory of principals can tell. Handing it on widens nothing: whoever gets it is
held to the rule's approvers and to self-approval like anyone."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from signoff.errors import ConflictError, ForbiddenError
from signoff.gate.base import GateBase
from signoff.gate.deciders import assignee, check_approval_decider, check_person, note_text
from signoff.gate.records import assignment_record
from signoff.gate.versions import changed
from signoff.types import Approval, Assignment

__all__ = ["Assigning"]


class Assigning(GateBase):
    """The Gate's view of who may decide, and its assignments (the Gate is one)."""

    def may_decide(self, approval: Approval, *, actor: str, roles: Iterable[str] = ()) -> bool:
        """Whether `actor` with `roles` may decide `approval` now: its rule's approvers (as
        escalation has widened them), and self-approval where the rule forbids it."""
        try:
            check_approval_decider(approval, actor=actor, roles=frozenset(roles), now=self.now())
        except ForbiddenError:
            return False
        return True

    async def assign(
        self,
        approval_id: str,
        to: str,
        *,
        actor: str,
        roles: Iterable[str] = (),
        note: str = "",
    ) -> Approval:
        """Hand a pending approval to a person, or to a role (``role:NAME``), with a note: as
        someone who may decide it, to someone who may too (as far as this gate's directory,
        `roles_of`, can tell). It widens nothing: whoever it is handed to is held to the rule's
        approvers and to self-approval like anyone."""
        to, note = assignee(to), note_text(note)
        check_person(actor)
        approval = await self.store.get_approval(approval_id)
        now = await self.time()
        if not approval.pending:
            raise ConflictError(f"approval {approval_id!r} is already {approval.status}")
        check_approval_decider(approval, actor=actor, roles=frozenset(roles), now=now)
        self._check_assignee(approval, to, now)
        assigned = Assignment(to=to, by=actor, note=note, at=now)
        handed = changed(replace(approval, assigned=assigned), "assign", by=actor, at=now,
                         note=f"to {to}", base=approval)  # fmt: skip
        record = assignment_record(approval, assigned)
        if not await self.store.save_decisions([(handed, approval.version)], audit=[record]):
            raise ConflictError(f"approval {approval_id!r} changed meanwhile; look again")
        self.notifier.notify(approval.id)
        return handed
