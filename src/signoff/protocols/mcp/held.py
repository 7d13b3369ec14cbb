"""How the gateway judges a request and answers it: a tool call, a resource read or a prompt
got is one call the policy allows, denies or asks a person about.

A call the policy allows is forwarded (`forward`); one it denies is refused; one that asks
becomes an approval in the shared store (the web inbox, `signoff inbox`, the API) and waits for a
decision (`waiting`). When its wait runs out the call answers "pending", and the same call again
(same asker, kind, name and arguments) waits on that approval, not a new one. Over 2026-07-28,
where the client can show a form, the call answers with the form at once, and its retry brings
the answer. What a server asks of a 2026-07-28 client before it answers is passed on (`relay`):
the retry with the client's answers goes on in the same call — the one its approval let through,
once, or one the policy lets through, judged again.

The gateway is an origin of external calls like any framework's (ARCHITECTURE §6): an asker's
exact call is a thread, its approvals are held by `Gate.hold_external` under ids counting them,
and each approval is answered once (`settling`), so the approved call runs exactly once, and after
it an identical call asks again (unless an approve-always grant lets it through).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from signoff.errors import NotFoundError
from signoff.gate import CheckContext, Gate, Outcome
from signoff.gate.ids import external_key
from signoff.gate.once import Ledger
from signoff.gate.preview import Previews
from signoff.protocols.mcp.answers import DOING, Reply, pending, shape_of
from signoff.protocols.mcp.dialog import ShowArgs, shown_in
from signoff.protocols.mcp.forward import forwarding, send
from signoff.protocols.mcp.preview import upstream_previews
from signoff.protocols.mcp.questions import ORIGIN
from signoff.protocols.mcp.relay import relayed_in
from signoff.protocols.mcp.request import Action, Asked, Asker
from signoff.protocols.mcp.requesting import Round
from signoff.protocols.mcp.screen import Screen
from signoff.protocols.mcp.settings import GatewaySettings
from signoff.protocols.mcp.settling import Settling
from signoff.protocols.mcp.waiting import Waiting
from signoff.types import Approval, ToolCall

__all__ = ["ORIGIN", "Holding"]

_BRACKETS = [2**k - 1 for k in range(48)]
"""The call ids a thread's first read looks for (`Holding._last_judged`)."""
_READ = 64
"""How many call ids each further read looks for."""


class Holding:
    """The gateway's judging, waiting and answering, over `gate`."""

    def __init__(self, gate: Gate, settings: GatewaySettings, *, show_args: ShowArgs) -> None:
        self.gate = gate
        self.store = gate.store
        self.settings = settings
        self.ledger = Ledger(gate.store)
        self.screen = Screen(lambda: gate.engine)
        self.waiting = Waiting(gate, settings, show_args=show_args)
        self.settling = Settling(gate, settings, ledger=self.ledger, screen=self.screen)

    async def answer(self, asked: Asked, action: Action, params: Any) -> Any:
        """The reply to a request for `action` (`params` the request's, for a 2026-07-28
        retry's state and answers)."""
        shape = shape_of(action.call)
        subject = _subject(asked.asker, action.call)
        answers: Mapping[str, Any] | None = None
        seen: int | None = None
        relay = relayed_in(params.request_state) if params.request_state else None
        server = None if action.upstream is None else action.upstream.name
        if relay is not None and relay.server != server:
            # The call's server is another now (a read goes where its URI is listed): what
            # the one that asked put in its state is not the other's to read.
            raise MCPError(INVALID_PARAMS, "requestState is another server's")
        if relay is not None and relay.asker != asked.asker.name:
            raise MCPError(INVALID_PARAMS, "requestState is another asker's")
        if relay is not None and relay.approval_id is not None:
            # The server behind asked for input in the call an approval let through: the
            # same call again, with the client's answers, once.
            approval = await self._asked_for(relay.approval_id, asked.asker, subject)
            if approval.status not in ("approved", "edited"):
                raise MCPError(INVALID_PARAMS, "requestState names no approved call")
            round = relay.again(params.input_responses)
            answer = await self.settling.settle(asked, action, approval, late=False, again=round)
            assert answer is not None  # only a late call finds an approval answered before it
            return answer
        if params.request_state and relay is None:
            # A 2026-07-28 retry: the approval it names, the version of it its form showed,
            # and the answer to that form.
            approval, seen = await self._from_state(params.request_state, asked.asker, subject)
            answers = params.input_responses
        else:
            # A call, or one the policy let through made again with what its server asked
            # for: judged (again) as any call is. Answers a call brings unasked go with it to
            # the server (a server may take them without a state of its own).
            responses = params.input_responses
            again = Round(responses=responses) if relay is None else relay.again(responses)
            found = await self._approval_for(asked, action, subject, again=again)
            if not isinstance(found, Approval):
                return found
            approval = found
        decided = await self.waiting.decided(asked, approval, answers, seen)
        if not isinstance(decided, Approval):
            return decided  # the form that asks for the decision
        approval = decided
        if approval.pending:
            return pending(shape, approval)
        answer = await self.settling.settle(asked, action, approval, late=False)
        assert answer is not None  # only a late call finds an approval answered before it
        return answer

    async def _approval_for(
        self, asked: Asked, action: Action, subject: str, *, again: Round | None = None
    ) -> Approval | Reply:
        """The approval the call waits on — the one asked before for the same call by the same
        asker and not answered yet, or a new one — or the call's answer: its result when the
        policy lets it run, why not when it blocks it, or the answer to an approval decided
        before the call came and not answered yet. A question (the ask tool's) always waits on
        one: the policy never lets it run.

        An asker's exact call (`subject`) is a thread of external calls whose ids count its
        approvals: "0" is the first call's, and "n+1" is judged once the call judged "n" is
        answered (or was let through by a grant, or blocked). A retry finds the pending one
        under its id, and the gate keeps one verdict per id: two gateways asking at once ask
        once.

        A call made `again` with what its server asked for is sent with it when the policy
        lets it through; one the policy now asks about starts afresh once approved."""
        call = action.call
        judged = CheckContext(origin=ORIGIN, requested_by=asked.asker.name)
        forwarded = forwarding(call, asked.asker)
        if call.kind != "question" and self.gate.engine.evaluate(call).kind != "ask":
            # Only a call the policy asks for can wait on an approval (a grant only turns an
            # ask into an allow): the others are judged afresh, each time. The audited forward
            # of a call that may run again (a read, a read-only tool) does not wait for the
            # disk, as such a call's claim does not: lost only with the machine. Any other's
            # waits, before the call goes.
            [outcome], _ = await self.gate.hold(
                [call], judged, also_audit=forwarded, durable=not action.idempotent
            )
            return await self._judged(asked, action, outcome, again=again)
        thread = replace(judged, thread_id=subject)
        number = await self._last_judged(subject)
        while True:
            [outcome] = await self.gate.hold_external(
                [replace(call, id=str(number))],
                thread,
                also_audit=forwarded,
                previews=self.previews(asked, action),
            )
            if not outcome.recorded:
                return await self._judged(asked, action, outcome, again=again)
            if outcome.approval is not None:
                if outcome.approval.pending:
                    return outcome.approval
                answer = await self.settling.settle(asked, action, outcome.approval, late=True)
                if answer is not None:
                    return answer
            number += 1  # that one is done with: this call is the next

    def previews(self, asked: Asked, action: Action) -> Previews | None:
        """The preview of `action`'s tool its server's config names, over the asker's own
        connection (`upstream_previews`)."""
        if action.upstream is None:
            return None
        return upstream_previews(
            asked.peer, action.upstream, action.call, headers=asked.headers,
            timeout=self.settings.preview_timeout,
        )  # fmt: skip

    async def _judged(
        self, asked: Asked, action: Action, outcome: Outcome, *, again: Round | None
    ) -> Approval | Reply:
        """What a call judged now comes to: its approval, or run (audited with its verdict),
        or blocked."""
        if outcome.approval is not None:
            return outcome.approval
        if outcome.kind == "run":
            return await send(asked, action, action.call, screen=self.screen, again=again)
        doing = DOING[action.call.kind]
        return shape_of(action.call).refused(
            f"signoff blocked this {doing}: {outcome.verdict.reason}", "blocked"
        )

    async def _last_judged(self, subject: str) -> int:
        """The greatest call id judged in the subject's thread (0 when none). The ids are
        judged in order, so those judged are 0 to n: a read of the ids 2**k - 1 brackets n,
        and each further read narrows the bracket by `_READ`."""

        def key(number: int) -> str:
            return external_key(ORIGIN, subject, str(number))

        async def greatest(numbers: Iterable[int], default: int) -> int:
            keys = {key(n): n for n in numbers}
            judged = await self.store.external_calls(list(keys))
            return max((keys[k] for k in judged), default=default)

        low = await greatest(_BRACKETS, 0)
        high = 2 * low + 1  # the next of the 2**k - 1: not judged
        while high - low > 1:
            step = -(-(high - low) // _READ)
            found = await greatest(range(low + step, high, step), low)
            low, high = found, min(found + step, high)
        return low

    async def _from_state(
        self, state: str, asker: Asker, subject: str
    ) -> tuple[Approval, int | None]:
        """The approval a 2026-07-28 retry names in its (unsealed) request state, and the
        version of it the form showed; it must be one the gateway asked for this asker and this
        call."""
        try:
            shown = shown_in(state)
        except ValueError:
            raise MCPError(INVALID_PARAMS, "requestState names no approval of this call") from None
        return await self._asked_for(shown.approval_id, asker, subject), shown.version

    async def _asked_for(self, approval_id: str, asker: Asker, subject: str) -> Approval:
        """The approval a retry's state names: it must be one the gateway asked for this asker
        and this call."""
        try:
            approval = await self.store.get_approval(approval_id)
            asked = (approval.origin, approval.thread_id, approval.requested_by)
        except NotFoundError:
            asked = None
        if asked != (ORIGIN, subject, asker.name):
            raise MCPError(INVALID_PARAMS, "requestState names no approval of this call")
        return approval


def _subject(asker: Asker, call: ToolCall) -> str:
    """Who asked for which exact call: what a retry is recognized by."""
    return hashlib.sha256(f"{asker.name}\n{call.digest}".encode()).hexdigest()
