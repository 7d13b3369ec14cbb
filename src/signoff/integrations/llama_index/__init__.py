"""LlamaIndex agent workflows behind signoff: the agent as it is, run through `SignoffWorkflow`.

    runs = connect("policy.yaml", origin="llama-index", database="sqlite:///signoff.db")
    agent = SignoffWorkflow(FunctionAgent(tools=[transfer], llm=llm), runs)
    ran = await agent.run("Pay acme 500", thread="payments-1")  # ran.output, or ran.asked
    stop = agent.resumer().start()  # resumes it once decided, in any channel

Allowed calls run once, denied ones tell the model why, asked ones wait the workflow's own way
(``InputRequiredEvent``, ``HumanResponseEvent``): the run stops, its `Context` kept by signoff,
and any process resumes it as signoff's store says (a decision an event carries is its user's).
"""

from __future__ import annotations

from signoff.errors import MissingExtraError
from signoff.gate.external import connect

try:  # the framework is imported by the parts below
    from signoff.integrations.llama_index.asking import ask_person
    from signoff.integrations.llama_index.workflow import ORIGIN, Ran, SignoffWorkflow
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.integrations.llama_index", "llama-index") from exc

__all__ = ["ORIGIN", "Ran", "SignoffWorkflow", "ask_person", "connect"]
