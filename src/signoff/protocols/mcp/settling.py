"""The answer to a decided approval, given once: the call that claims it in the `Ledger` gives
it — the approved call forwarded (audited first), or why not — and every other call with the
same approval gets that answer, waiting up to the gateway's `wait` on one being given elsewhere.
So an approved call runs exactly once, whichever gateway and however many retries take it.
"""

from __future__ import annotations

import contextlib

import anyio

from signoff.errors import ClaimLost, ExecutionFailed, InvalidEditError, OutcomeUnknown
from signoff.gate import Gate
from signoff.gate.edits import check_edit
from signoff.gate.once import Claim, Ledger, Recorded
from signoff.protocols.mcp.answers import DOING, Reply, outcome, running, shape_of, unknown
from signoff.protocols.mcp.forward import forward_record, send
from signoff.protocols.mcp.request import Action, Asked
from signoff.protocols.mcp.requesting import Round
from signoff.protocols.mcp.screen import Screen
from signoff.protocols.mcp.settings import GatewaySettings
from signoff.types import Approval, ToolCall

__all__ = ["Settling"]

_ANSWER = "mcp:"
"""Ledger keys: `_ANSWER + approval id` keeps the answer given to an approval's call, and
that key + `_AGAIN` the one given instead when the approved call left none (cut off)."""
_AGAIN = ":again"
_ROUND = ":round:"


class Settling:
    """Gives decided approvals' answers through `ledger`, over `gate`."""

    def __init__(
        self, gate: Gate, settings: GatewaySettings, *, ledger: Ledger, screen: Screen
    ) -> None:
        self.gate = gate
        self.store = gate.store
        self.settings = settings
        self.ledger = ledger
        self.screen = screen

    async def settle(
        self,
        asked: Asked,
        action: Action,
        approval: Approval,
        *,
        late: bool,
        again: Round | None = None,
    ) -> Reply | None:
        """The answer to a decided approval, given once through the ledger: the call that
        claims it gives it; the others get it, waiting up to the gateway's `wait` on one being
        given elsewhere. When the approved call left no answer — cut off midway, or its gateway
        gone — the answer is given under a second key: the call run again where it may be
        (read-only, idempotent, a read), else "outcome unknown".

        A `late` call found the approval decided when it came: None when the approval was
        answered before then (the call asks anew).

        A call made `again` with what the server asked for (2026-07-28) is answered once for
        each time the server asked: under a key naming how many times it had asked. The first
        answers sent for a time are the ones taken; others for the same time get their answer
        (the approved call takes one path through the server's questions, never two)."""
        key = _ANSWER + approval.id + ("" if again is None else f"{_ROUND}{again.number}")
        try:
            return await self._settle_under(key, asked, action, approval, late=late, round=again)
        except (OutcomeUnknown, ExecutionFailed):
            pass  # the approved call left no answer
        try:
            return await self._settle_under(
                key + _AGAIN, asked, action, approval, late=late, again=True, round=again
            )
        except ExecutionFailed:  # cut off again: the approval is answered, its outcome unknown
            return None if late else unknown(shape_of(approval.call), approval)

    async def _settle_under(
        self,
        key: str,
        asked: Asked,
        action: Action,
        approval: Approval,
        *,
        late: bool,
        again: bool = False,
        round: Round | None = None,
    ) -> Reply | None:
        """The answer under one ledger key: given by this call when it claims the key, else
        the one given. `OutcomeUnknown` or `ExecutionFailed` when none was."""
        shape = shape_of(approval.call)
        try:
            found = await self._claim(key, again=again, late=late, call=approval.call)
        except TimeoutError:
            return running(shape, approval)
        if found is None:
            return None
        if isinstance(found, Recorded):
            return shape.kept(found.value)
        return await self._give(asked, action, approval, found, again=again, round=round)

    async def _claim(
        self, key: str, *, again: bool, late: bool, call: ToolCall
    ) -> Claim | Recorded | None:
        """Claim `key` to give the answer, or get the one given (waiting up to the gateway's
        `wait` on one being given); for a `late` call, None when it was given before. The
        second key's claim is taken over from a gateway gone: giving it again is safe."""
        if late:
            try:
                found = await self.ledger.claim(
                    key, idempotent=again, wait=0, tool=call.name, digest=call.digest
                )
            except TimeoutError:
                pass  # being given now: this call shares it
            else:
                return None if isinstance(found, Recorded) else found
        return await self.ledger.claim(
            key, idempotent=again, wait=self.settings.wait, tool=call.name, digest=call.digest
        )

    async def _give(
        self,
        asked: Asked,
        action: Action,
        approval: Approval,
        claim: Claim,
        *,
        again: bool,
        round: Round | None,
    ) -> Reply:
        """Give the answer under the claimed key: an approved call forwarded (audited first),
        or why not — and `again`, only where the call may run again."""
        call = approval.call
        shape = shape_of(call)
        try:
            result: Reply | None
            if approval.status in ("approved", "edited"):
                await self.gate.catch_up()
                result = self._unfit(action, approval)
            else:
                result = outcome(shape, approval)
            if result is None and again and not action.idempotent:
                result = unknown(shape, approval)
            elif result is None:
                forward = forward_record(
                    call, asked.asker, approval=approval.id, rule=approval.rule
                )
                await self.store.append_audit([forward])
                result = await send(
                    asked, action, call, screen=self.screen, approval=approval.id, again=round
                )
        except BaseException as exc:
            # Cut off midway (the client went away) or broken: whether the call ran is unknown,
            # and the next call to answer the approval says so at once (or runs it again).
            # A claim taken over meanwhile records nothing (the claim logs it): `exc` is still
            # what this call must raise.
            with anyio.CancelScope(shield=True), contextlib.suppress(ClaimLost):
                await claim.fail(exc)
            raise
        # Given: kept, even if the client goes now. Unless another gateway took this one for
        # gone and gave the answer again meanwhile: the ledger keeps that one (the claim logs
        # it), and this call still gets the answer it was given.
        with anyio.CancelScope(shield=True), contextlib.suppress(ClaimLost):
            await claim.finish(shape.keep(result))
        return result

    def _unfit(self, action: Action, approval: Approval) -> Reply | None:
        """Why the approved call may not run now (the policy denies it since, or an edit does
        not fit what the server takes), or None."""
        shape = shape_of(approval.call)
        doing = DOING[approval.call.kind]
        denied = self.gate.denied_now(approval)
        if denied is not None:
            return shape.refused(f"signoff blocked this {doing}: {denied}", "blocked")
        if approval.status == "edited":
            if action.schema is None:
                if approval.call.args:
                    return shape.refused("a resource read has no arguments to edit", "blocked")
                return None
            try:
                check_edit(approval.call.args, action.schema)
            except InvalidEditError as exc:
                what = "the tool's schema" if approval.call.kind == "tool" else "the prompt"
                return shape.refused(f"the edited arguments do not fit {what}: {exc}", "blocked")
        return None
