"""Agno agents behind signoff (DCAF's runtime): the agent as it is, run through `SignoffAgent`.

    runs = connect("policy.yaml", origin="agno", database="sqlite:///signoff.db")
    agent = SignoffAgent(Agent(model=..., tools=[...], db=SqliteDb(db_file="agno.db")), runs)
    out = await agent.run("Delete the nginx-123 pod", session_id="ops-1")
    # out.is_paused while calls wait for a person: decided in the inbox, the API, the terminal
    out = await agent.resume("ops-1")     # or agent.resumer().start() next to the app

signoff's policy judges every tool call of the agent with its arguments — its own tools and its
`MCPTools` alike. A tool the policy may ask about is marked ``requires_confirmation`` for the
call, so Agno pauses the run there and keeps it in the agent's `db`; a tool it always allows or
always denies is not. At a pause signoff settles what it can itself — an allowed call goes on,
a denied one is answered with the reason — and holds only the asked ones as approvals in its
store. The run is continued only once every call of the pause is decided (Agno would reject an
undecided one silently), and by one process at a time. Every call runs through signoff's ledger,
exactly once, reading the decision **from signoff's store**, whoever confirmed it to Agno: an
approval runs the call, an edit runs it with the edited arguments (checked against the tool's
schema and the policy), a response is the tool's result, a rejection's reason reaches the model.

`SignoffAgent.dcaf` takes DCAF's wire format: decisions as ``data.tool_calls[{id, execute,
rejection_reason}]``, answered with ``has_pending_approvals``, ``is_complete`` and
``pending_requirements[{requirement_id, tool_name, tool_args}]``. signoff adds the held call's
``approval_id`` and ``version`` to each call it lists, and takes a decision's ``version`` back: a
decision made on a version that changed since is not taken.
"""

from __future__ import annotations

import os

from signoff.gate.external import connect
from signoff.integrations._extra import needs

os.environ.setdefault("AGNO_TELEMETRY", "false")  # signoff's users opt in to Agno's, not we

with needs(__name__, "agno"):  # the framework is imported by the parts below
    from signoff.integrations.agno.agent import ORIGIN, SignoffAgent
    from signoff.integrations.agno.asking import ask_person
    from signoff.integrations.agno.dcaf import DcafRequest, dcaf_answer

__all__ = ["ORIGIN", "DcafRequest", "SignoffAgent", "ask_person", "connect", "dcaf_answer"]
