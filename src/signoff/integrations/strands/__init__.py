"""Strands Agents behind signoff: one hook provider on the agent.

    runs = connect("policy.yaml", origin="strands", database="sqlite:///signoff.db")
    signoff = SignoffHooks(runs)
    agent = Agent(tools=[...], hooks=[signoff], session_manager=FileSessionManager(session_id=...))
    result = agent("Mail the notes to Bob", invocation_state={"user_id": "alice"})
    # result.stop_reason == "interrupt" while calls wait for a person
    ...                                   # decided in the inbox, the API, the terminal
    stop = signoff.resumer(agent_of).start()  # answers the interrupts once decided

signoff's policy judges every tool call of the agent with its arguments (``BeforeToolCallEvent``):
allowed calls run once, through signoff's ledger; denied ones are cancelled with the reason for
the model; asked ones become approvals in signoff's store and Strands' own interrupt (named
``signoff``, its reason naming the approval and the version of the call) — the agent stops there,
no model call, and its session manager keeps it. When the interrupt is answered (by the resumer,
or by the app's own ``agent(responses)``), Strands runs the hook again: signoff reads the decision
**from its store**, never from the answer, and runs the call once (approved, or edited: checked
against the tool's schema and the policy), or gives the person's response as its result, or
cancels it with the rejection's reason. An answer other than the resumer's is a decision of the
invocation's user (``invocation_state["user_id"]``), held to the policy's rules like anyone's; an
invocation that answers the interrupts goes on only once every call is decided, and a pause is
continued once.
"""

from __future__ import annotations

from signoff.errors import MissingExtraError
from signoff.gate.external import connect

try:  # the framework is imported by the parts below
    from signoff.integrations.strands.hooks import DECIDED, SignoffHooks
    from signoff.integrations.strands.session import NAME
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.integrations.strands", "strands") from exc

__all__ = ["DECIDED", "NAME", "ORIGIN", "SignoffHooks", "connect"]

ORIGIN = "strands"
