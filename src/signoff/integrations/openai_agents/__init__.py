"""OpenAI Agents SDK agents behind signoff: the agent as it is, run through `SignoffAgent`.

    runs = connect("policy.yaml", origin="openai-agents", database="sqlite:///signoff.db")
    agent = SignoffAgent(my_agent, runs)
    result = await agent.run("Mail the notes to Bob", thread="notes-1")
    # result.final_output, or result.interruptions while calls wait for a person
    ...                                   # decided in the web inbox, the API, the terminal
    result = await agent.resume("notes-1")  # or agent.resumer().start() next to the app

Each run wraps the agent's function tools and its MCP servers' tools — and those of every agent
it hands off to — so that signoff's policy judges every call with its arguments (the tool's
``needs_approval``): allowed calls run once, through signoff's ledger; denied ones give the model
the reason; asked ones become approvals in signoff's store and the run ends with the SDK's
interruptions. signoff keeps the thread (its conversation, appended; a paused run's `RunState`)
so that any process resumes it with the decisions read from signoff's store: an approval runs
the call, an edit runs it with the edited arguments (checked against the tool's schema and the
policy), a response is the tool's result, a rejection's reason reaches the model — what the SDK
itself cannot do (it has no edit, and answers only with a rejection). Approve-always is a
signoff grant, so it holds across runs and threads as its scope says. Resumed twice, by two
processes at once, each tool still runs once; a pause is continued at most once.

signoff holds what runs through `SignoffAgent`: an Agents SDK `Agent` of your own, unwrapped,
run on a paused `RunState` (`Runner.run(agent, state)`) runs its tools without signoff.
"""

from __future__ import annotations

from signoff.gate.external import connect
from signoff.integrations._extra import needs

with needs(__name__, "openai-agents"):  # the framework is imported by the parts below
    from signoff.integrations.openai_agents.agent import ORIGIN, SignoffAgent
    from signoff.integrations.openai_agents.asking import ask_person

__all__ = ["ORIGIN", "SignoffAgent", "ask_person", "connect"]
