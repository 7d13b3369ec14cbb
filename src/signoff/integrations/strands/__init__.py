"""Strands Agents behind signoff: one hook provider on the agent.

    runs = connect("policy.yaml", origin="strands", database="sqlite:///signoff.db")
    agent = Agent(tools=[...], hooks=[SignoffHooks(runs)], session_manager=...)
    result = agent("Pay the invoice", invocation_state={"user_id": "alice"})  # an interrupt
    stop = hooks.resumer(agent_of).start()  # answers it once decided, in any channel

Allowed calls run once through signoff's ledger, denied ones are cancelled, asked ones are Strands'
interrupt, kept by the session manager; answered, the decision is read from signoff's store.
"""

from __future__ import annotations

from signoff.errors import MissingExtraError
from signoff.gate.external import connect

try:  # the framework is imported by the parts below
    from signoff.integrations.strands.asking import ask_person
    from signoff.integrations.strands.hooks import DECIDED, NAME, SignoffHooks
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.integrations.strands", "strands") from exc

__all__ = ["DECIDED", "NAME", "ORIGIN", "SignoffHooks", "ask_person", "connect"]

ORIGIN = "strands"
