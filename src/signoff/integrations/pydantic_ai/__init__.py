"""Pydantic AI agents behind signoff: the agent as it is, run through `SignoffAgent`.

    runs = connect("policy.yaml", origin="pydantic-ai", database="sqlite:///signoff.db")
    agent = SignoffAgent(my_agent, runs)
    result = await agent.run("Mail the notes to Bob", thread="notes-1")
    # result.output: the agent's output, or DeferredToolRequests while calls wait for a person
    ...                                   # decided in the web inbox, the API, the terminal
    result = await agent.resume("notes-1")  # or agent.resumer().start() next to the app

signoff's policy judges every tool call with its arguments (a capability's `wrap_tool_execute`,
and `handle_deferred_tool_calls` for tools declared ``requires_approval=True``): allowed calls run
once, through signoff's ledger; denied ones give the model `ToolDenied` with the reason; asked
ones become approvals in signoff's store and the run ends with Pydantic AI's
`DeferredToolRequests` (its ``metadata`` names each call's signoff approval and version). signoff
keeps the thread's message history (appended, never rewritten) so that any process resumes it:
the decisions are read from signoff's store, never from a payload — an approval runs the call, an
edit runs it with the edited arguments (checked against the tool's schema and the policy), a
response is the tool's result, a rejection's reason reaches the model. Resumed twice, by two
processes at once, the tool still runs once; a pause is continued at most once, and only once a
call it waits on is decided.
"""

from __future__ import annotations

from signoff.gate.external import connect
from signoff.integrations._extra import needs

with needs(__name__, "pydantic-ai"):  # the framework is imported by the parts below
    from signoff.integrations.pydantic_ai.agent import ORIGIN, SignoffAgent, SignoffCapability
    from signoff.integrations.pydantic_ai.asking import ask_person

__all__ = ["ORIGIN", "SignoffAgent", "SignoffCapability", "ask_person", "connect"]
