"""Google ADK agents behind signoff: one plugin on the app's `Runner` (kagent's runtime).

    runs = connect("policy.yaml", origin="google-adk", database="sqlite:///signoff.db")
    signoff = SignoffPlugin(runs)
    app = App(name="ops", root_agent=agent, plugins=[signoff])
    runner = Runner(app=app, session_service=DatabaseSessionService(...))
    ...                                   # a call waits: decided in the inbox, the API, the CLI
    stop = signoff.resumer(runner).start()  # sends ADK the confirmation once it is decided

signoff's policy judges every tool call of every agent of the runner with its arguments
(``before_tool_callback``): allowed calls run once, through signoff's ledger; denied ones answer
the model with the reason; asked ones become approvals in signoff's store and ADK's own pause, a
``request_confirmation`` carrying the approval's id and version — the run stops there, no model
call. When the confirmation comes back (from the resumer, or from any ADK client), ADK runs the
call again: signoff reads the decision **from its store**, never from the confirmation's
payload, and runs the call once (approved, or edited: checked against the tool's schema and the
policy), or gives the person's response as its result, or the rejection with its reason. ADK runs
a confirmed tool again in each invocation that the confirmation reaches; the ledger keeps it to
one execution.
"""

from __future__ import annotations

from signoff.gate.external import connect
from signoff.integrations._extra import needs

with needs(__name__, "google-adk"):  # the framework is imported by the parts below
    from signoff.integrations.google_adk.asking import ask_person
    from signoff.integrations.google_adk.confirmation import CONFIRMATION
    from signoff.integrations.google_adk.confirmation import confirmations as confirmations
    from signoff.integrations.google_adk.plugin import SignoffPlugin

__all__ = ["CONFIRMATION", "ORIGIN", "SignoffPlugin", "ask_person", "connect"]

ORIGIN = "google-adk"
