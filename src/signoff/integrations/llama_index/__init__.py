"""LlamaIndex agent workflows behind signoff: the agent as it is, run through `SignoffWorkflow`.

    runs = connect("policy.yaml", origin="llama-index", database="sqlite:///signoff.db")
    agent = SignoffWorkflow(FunctionAgent(tools=[transfer], llm=llm), runs)
    ran = await agent.run("Pay acme 500", thread="payments-1")  # ran.output, or ran.asked
    stop = agent.resumer().start()  # resumes it once decided, in any channel (or agent.resume)

signoff's policy judges each tool call of each agent with its arguments: allowed calls run once,
through signoff's ledger; denied ones give the model the reason; asked ones wait the workflow's
own way (an ``InputRequiredEvent`` naming signoff's approval and version, then a wait for a
``HumanResponseEvent``) and the run stops, its `Context` kept in signoff's store. Resumed in
any process, a held call reads its decision from the store, never from the event: approved, it
runs once; edited, it runs as edited (checked against its schema and the policy); a response is
its result; a rejection's reason reaches the model. A ``HumanResponseEvent`` that carries a
decision is its user's, held to the policy's approvers and self-approval.
"""

from __future__ import annotations

from signoff.errors import MissingExtraError
from signoff.gate.external import connect

try:  # the framework is imported by the parts below
    from signoff.integrations.llama_index.workflow import ORIGIN, Ran, SignoffWorkflow
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.integrations.llama_index", "llama-index") from exc

__all__ = ["ORIGIN", "Ran", "SignoffWorkflow", "connect"]
