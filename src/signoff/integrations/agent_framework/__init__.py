"""Microsoft Agent Framework agents behind signoff: the agent as it is, run through
`SignoffAgent`.

    runs = connect("policy.yaml", origin="agent-framework", database="sqlite:///signoff.db")
    agent = SignoffAgent(my_agent, runs)
    response = await agent.run("Mail the notes to Bob", thread="notes-1")
    # response.text, or response.user_input_requests while calls wait for a person
    ...                                   # decided in the web inbox, the API, the terminal
    response = await agent.resume("notes-1")  # or agent.resumer().start() next to the app

Each run adds `SignoffMiddleware`, a function middleware, so that signoff's policy judges every
call with its arguments before it runs: allowed calls run once, through signoff's ledger; denied
ones give the model the reason; asked ones become approvals in signoff's store and the run ends
with the framework's own ``function_approval_request`` for each (its ``additional_properties``
name the signoff approval and version). signoff keeps the thread's `AgentSession` so that any
process resumes it with the decisions read from signoff's store — an approval runs the call, an
edit runs it with the edited arguments (checked against the tool's schema and the policy), a
response is the tool's result, a rejection's reason reaches the model. The app may also answer
the requests the framework's way (``request.to_function_approval_response(approved)``, passed
to `SignoffAgent.run` with the `user` who decided): signoff takes them as that person's
decisions, held to the same rules as any. Resumed twice, by two processes at once, each tool
still runs once; a pause is continued at most once.
"""

from __future__ import annotations

from signoff.errors import MissingExtraError
from signoff.gate.external import connect

try:  # the framework is imported by the parts below
    from signoff.integrations.agent_framework.agent import ORIGIN, SignoffAgent
    from signoff.integrations.agent_framework.middleware import SignoffMiddleware
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.integrations.agent_framework", "agent-framework") from exc

__all__ = ["ORIGIN", "SignoffAgent", "SignoffMiddleware", "connect"]
