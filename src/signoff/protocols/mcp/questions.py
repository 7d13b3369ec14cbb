"""A server behind the gateway asking a person — `elicitation/create` in the middle of a call
(2025-11-25), or form elicitations among the input requests of its result (2026-07-28) — when
the client cannot answer, or whenever ``gateway.server_questions: inbox`` says so: each
elicitation becomes a signoff question, held, answered from any channel and given back to the
server (over 2026-07-28, in the request made again with the answers, by the gateway itself).

The question is a held call of kind ``question`` named `NAME`, of the server that asked, in the
name of the client's principal: the policy names it as it names the server's tools
(``ask: {question: elicitation}, server: fs``, with ``approvers``), and the core bounds it
(`Question.from_args`: a form of MCP elicitation's flat subset), holds it and checks every
answer. The gateway waits for it as it waits for a held call (``gateway.wait``), then answers the
server: the answer accepted as the form's content, a rejection declined, no answer cancelled (the
question expires, so nobody answers into the void). A form outside the subset is refused, nothing
held, and so is one past `MAX_WAITING` of the same server's in the same name; either way the
relay is audited.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any, Final

import anyio
from mcp import types
from mcp_types import INVALID_PARAMS

from signoff.errors import ApprovalTimeout
from signoff.gate import CheckContext, Gate
from signoff.gate.forms import FormError
from signoff.gate.ids import new_id
from signoff.gate.questions import Question
from signoff.protocols.mcp.relay import MAX_INPUTS
from signoff.protocols.mcp.settings import GatewaySettings
from signoff.store import AuditRecord
from signoff.types import Answer, Approval, ToolCall

__all__ = ["MAX_WAITING", "NAME", "ORIGIN", "ServerQuestions"]

NAME: Final = "elicitation"
"""The name of a server's question for the policy (its server is the server that asked)."""
ORIGIN: Final = "mcp-gateway"
"""The origin of the approvals and questions the gateway asks for; a held call's thread is the
asker's exact call (`held`)."""
MAX_WAITING: Final = MAX_INPUTS
"""The most questions one server may have waiting in the inbox at once in one principal's name
(a 2025-era server asks as many at once as it likes, a 2026-07-28 one up to `MAX_INPUTS` a round
per call); past it a question is refused, nothing held."""
_FORM = types.ElicitRequestFormParams


class ServerQuestions:
    """Where the servers' form elicitations go, and the inbox's side of it, over `gate`."""

    def __init__(self, gate: Gate, settings: GatewaySettings) -> None:
        self.gate = gate
        self.settings = settings
        self._waiting: dict[tuple[str, str], int] = {}
        """How many questions each server asks in each principal's name wait now."""

    def possible(self) -> bool:
        """Whether a server's elicitation may go to the inbox (a connection then declares
        elicitation, whatever its client declared)."""
        return self.settings.server_questions != "client"

    def to_inbox(self, declared: types.ClientCapabilities) -> bool:
        """Whether a form elicitation on a connection of a client that declared `declared` goes
        to the inbox: always (``inbox``), or when that client cannot answer a form (``auto``)."""
        route = self.settings.server_questions
        return route == "inbox" or (route == "auto" and not _fills_forms(declared))

    def declared(self, declared: types.ClientCapabilities | None) -> types.ClientCapabilities:
        """What a 2026-07-28 request declares for a client that declared `declared`: form
        elicitation too, where its forms may go to the inbox."""
        declared = declared or types.ClientCapabilities()
        if not self.possible() or _fills_forms(declared):
            return declared
        url = None if declared.elicitation is None else declared.elicitation.url
        form = types.ElicitationCapability(form=types.FormElicitationCapability(), url=url)
        return declared.model_copy(update={"elicitation": form})

    def takes(
        self, result: types.InputRequiredResult, declared: types.ClientCapabilities | None
    ) -> bool:
        """Whether the inbox answers some of a 2026-07-28 server's input requests, for a
        client that declared `declared`: its form elicitations go there (the others go to the
        client)."""
        asks = result.input_requests or {}
        return (
            len(asks) <= MAX_INPUTS
            and self.to_inbox(declared or types.ClientCapabilities())
            and any(isinstance(a.params, _FORM) for a in asks.values())
        )

    async def answers(
        self, server: str, asker: str, result: types.InputRequiredResult
    ) -> dict[str, types.ElicitResult]:
        """The inbox's answers to a 2026-07-28 server's form elicitations among its input
        requests (`takes`), asked at once; one that cannot be asked is declined."""
        asks = result.input_requests or {}
        forms = {k: a.params for k, a in asks.items() if isinstance(a.params, _FORM)}
        answers = await asyncio.gather(*(self.ask(server, asker, p) for p in forms.values()))
        declined = types.ElicitResult(action="decline")
        return {
            key: answer if isinstance(answer, types.ElicitResult) else declined
            for key, answer in zip(forms, answers, strict=True)
        }

    async def ask(
        self, server: str, asker: str, params: types.ElicitRequestFormParams
    ) -> types.ElicitResult | types.ErrorData:
        """The person's answer to `server`'s elicitation, asked in `asker`'s name, as the
        server is given it."""
        args = {"question": params.message, "schema": params.requested_schema}
        try:
            Question.from_args(args)
        except FormError as exc:
            await self._audit(server, asker, None, refused=str(exc))
            return types.ErrorData(
                code=INVALID_PARAMS,
                message=f"signoff cannot ask a person this through its inbox: {exc}",
            )
        whose = (server, asker)
        if self._waiting.get(whose, 0) >= MAX_WAITING:
            said = f"{MAX_WAITING} questions of this server's wait for a person already"
            await self._audit(server, asker, None, refused=said)
            return types.ErrorData(code=INVALID_PARAMS, message=f"signoff refused this: {said}")
        self._waiting[whose] = self._waiting.get(whose, 0) + 1
        try:
            return await self._asked(server, asker, args)
        finally:
            self._waiting[whose] -= 1
            if not self._waiting[whose]:
                del self._waiting[whose]

    async def _asked(
        self, server: str, asker: str, args: dict[str, Any]
    ) -> types.ElicitResult | types.ErrorData:
        call = ToolCall(id=new_id(), name=NAME, args=args, server=server, kind="question")
        context = CheckContext(origin=ORIGIN, requested_by=asker)
        [outcome], _ = await self.gate.hold([call], context)
        if outcome.approval is None:
            reason = outcome.verdict.reason
            await self._audit(server, asker, None, refused=reason)
            return types.ErrorData(code=INVALID_PARAMS, message=f"signoff blocked this: {reason}")
        approval = await self._answered(outcome.approval)
        await self._audit(server, asker, approval)
        return _result(approval)

    async def _answered(self, approval: Approval) -> Approval:
        """The question as it ends: answered or declined within the gateway's wait, else
        expired (also when the server's call is cut off meanwhile)."""
        decided: Approval | None = None
        try:
            decided = await self.gate.wait(approval.id, timeout=self.settings.wait)
        except ApprovalTimeout:
            pass
        finally:
            if decided is None:
                with anyio.CancelScope(shield=True):
                    [lapsed] = await self.gate.expire([approval])
        return lapsed if decided is None else decided

    async def _audit(
        self, server: str, asker: str, approval: Approval | None, *, refused: str | None = None
    ) -> None:
        data: dict[str, Any] = {
            "server": server,
            "method": "elicitation/create",
            "answered": approval is not None and approval.status == "answered",
            "to": "inbox",
        }
        if approval is not None:
            data["approval"] = approval.id
        if refused is not None:
            data["refused"] = refused
        record = AuditRecord(
            actor=asker, action="relay", subject=server, at=datetime.now(UTC), data=data
        )
        with anyio.CancelScope(shield=True):
            await self.gate.store.append_audit([record])


def _fills_forms(declared: types.ClientCapabilities) -> bool:
    elicitation = declared.elicitation
    return elicitation is not None and (
        elicitation.form is not None or elicitation.url is None  # {} is form mode
    )


def _result(approval: Approval) -> types.ElicitResult:
    """What the server is told: the answer, a decline, or a cancel (nobody answered)."""
    decision = approval.decision
    if isinstance(decision, Answer):
        return types.ElicitResult(action="accept", content=decision.value)
    if approval.status == "rejected":
        return types.ElicitResult(action="decline")
    return types.ElicitResult(action="cancel")
