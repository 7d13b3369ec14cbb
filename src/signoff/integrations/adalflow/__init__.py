"""AdalFlow runners behind signoff: a `PermissionManager` backed by signoff's gate (seed 004).

    runs = connect("policy.yaml", origin="adalflow", database="sqlite:///signoff.db")
    permissions = SignoffPermissions(runs, agent="assistant", timeout=600)
    runner = Runner(agent=agent, permission_manager=permissions)
    result = await runner.acall(prompt_kwargs={"input_str": "Clean up the tmp folder"})

Every tool call the runner makes is judged by signoff's policy with its arguments (not only by
the tool's name): allowed calls run, denied ones are answered with the reason, asked ones become
approvals in signoff's store — in the web inbox, the API, the terminal, every channel — while
the runner waits for the decision (`timeout` seconds at most: the approval then expires), listed
in the permission manager's ``pending_approvals`` as it stands (``confirmation_details`` names its
signoff approval and version). An approval runs the call (PROCEED_ONCE); approve-always is a
signoff grant, so the next such call runs without asking (PROCEED_ALWAYS); an edit runs the call
with the edited arguments, checked against the tool's schema and the policy (modify); a rejection
(CANCEL) or a person's response reaches the model as the tool's result, with its reason.
AdalFlow's streaming run emits its ``agent.tool_permission_request`` event for each call the
policy may ask about.

A call that may run is handed back to the runner as a call of signoff's hidden `RUN` tool, which
runs the real tool through signoff's ledger (`ExternalRuns.once`) with the call exactly as it
was judged, approved or edited: the core refuses (and audits) anything else, whatever the tool
manager does between the check and the execution.

An agent given `ask_person()` asks a person through it: signoff holds each call of it as a
question, answered from any channel, and the answer is the tool's result.

The AdalFlow run itself is not durable: the framework keeps it in memory, so a process that
stops loses the run (the approval stays in signoff's store, decided or not, and audited).
"""

from __future__ import annotations

from signoff.gate.external import connect
from signoff.integrations._extra import needs

with needs(__name__, "adalflow"):  # the framework is imported by the parts below
    from signoff.integrations.adalflow.asking import ask_person
    from signoff.integrations.adalflow.permissions import ANSWER, RUN, SignoffPermissions

__all__ = ["ANSWER", "ORIGIN", "RUN", "SignoffPermissions", "ask_person", "connect"]

ORIGIN = "adalflow"
