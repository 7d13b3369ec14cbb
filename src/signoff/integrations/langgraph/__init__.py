"""LangGraph graphs behind signoff: a drop-in `ApprovalToolNode`, `gated` for any node, and
`resumer` so a decision in any signoff channel resumes the thread (ARCHITECTURE §6).

    runs = connect("policy.yaml", origin="langgraph", database="sqlite:///signoff.db")
    builder.add_node("tools", ApprovalToolNode(tools, runs=runs))
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    stop = resumer(graph, runs).start()          # decisions in the inbox resume the thread

signoff's policy judges every call of a model turn with its arguments: allowed calls run, denied
ones get a blocked result and never run, asked ones are held as approvals and the node interrupts
once for all of them (the allowed siblings have run). LangGraph re-runs a node from its start when
it resumes: every call is then judged again under its key — (thread, AI message id, call id) —
and gets the same verdict and approval, and every execution goes through signoff's core
(`ExternalRuns.claim`: only the call as allowed, approved or edited runs) and its ledger, so a
tool runs once however often the node re-runs, or the same checkpoint is resumed, by any number
of processes. The decision is read from signoff's store, never from the resume payload; a
LangChain-style payload (``Command(resume={"decisions": [...]})``) is first recorded as a
decision of whoever sent it (`LangGraphGate.requested_by` of the resuming run), else of the
principal the app connected with, compare-and-set against one taken elsewhere.
"""

from __future__ import annotations

from signoff._moved import moved
from signoff.gate.external import connect
from signoff.integrations._extra import needs
from signoff.integrations._hitl import MARK, response_schema

with needs(__name__, "langgraph"):  # the framework is imported by the parts below
    from signoff.integrations.langgraph import interrupt
    from signoff.integrations.langgraph.gate import LangGraphGate
    from signoff.integrations.langgraph.gated import CallResult, gated
    from signoff.integrations.langgraph.node import ApprovalToolNode
    from signoff.integrations.langgraph.resuming import resumer

__all__ = [
    "MARK",
    "ORIGIN",
    "ApprovalToolNode",
    "CallResult",
    "LangGraphGate",
    "connect",
    "gated",
    "response_schema",
    "resumer",
]

ORIGIN = "langgraph"

# `LangGraphGate`'s interrupt methods are functions of `interrupt` that take the gate: the old
# methods stay, deprecated, attached here where both are known (the gate's module cannot import
# the interrupt's, which imports it).
for _name in ("decide_turn", "adecide_turn", "pause", "take"):
    _new = f"signoff.integrations.langgraph.interrupt.{_name}(gate, ...)"
    setattr(LangGraphGate, _name, moved(f"LangGraphGate.{_name}", _new)(getattr(interrupt, _name)))
