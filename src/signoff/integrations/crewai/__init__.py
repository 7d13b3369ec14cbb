"""CrewAI crews behind signoff: CrewAI's tool-call hooks deciding with signoff's gate.

    runs = connect("policy.yaml", origin="crewai", database="sqlite:///signoff.db")
    SignoffHooks(runs, requested_by="alice", timeout=600).register()
    result = crew.kickoff()

Every tool call of every agent in the process is judged by signoff's policy with its
arguments: allowed calls run, denied ones are answered with the reason, asked ones become
approvals in signoff's store — in the web inbox, the API, the terminal, every channel, with the
agent's conversation so far — while the hook waits for the decision (`timeout` seconds at most:
the approval then expires), listed in ``waiting`` meanwhile. An approval runs the call;
approve-always is a signoff grant, so the next such call runs without asking; an edit runs the
call with the edited arguments, checked against the tool's schema and the policy; a rejection or
a person's response reaches the model as the tool's result, with its reason.

A call that may run is run by the hook itself, through signoff's ledger (`ExternalRuns.once`),
exactly as it was judged, approved or edited — the core refuses (and audits) anything else —
and the hook then tells CrewAI not to run it again (it blocks it, and its after-call hook hands
the agent the tool's result). A hook that fails blocks the call too: CrewAI runs a call whose
hook raised, so signoff's never does.

A crew's run is not durable: CrewAI's hooks are synchronous and cannot stop the run, so a held
call waits in memory, and a process that stops loses the run (the approval stays in signoff's
store, decided or not, and audited). `crewai` is imported by `SignoffHooks.register` (and
`ask_person`), not here.

An agent given `ask_person()` asks a person through it: signoff holds each call of it as a
question, answered from any channel, and the answer is the tool's result.
"""

from __future__ import annotations

from signoff.gate.external import connect
from signoff.integrations.crewai.asking import ask_person
from signoff.integrations.crewai.hooks import SignoffHooks

__all__ = ["ORIGIN", "SignoffHooks", "ask_person", "connect"]

ORIGIN = "crewai"
"""The origin CrewAI's calls are kept under (``connect(..., origin=ORIGIN)``): the inbox names
them "via CrewAI"."""
