"""AG-UI (``pip install 'signoff[ag-ui]'``): ``POST /agui/{agent}`` takes a ``RunAgentInput`` and
streams the run as AG-UI events over server-sent events — ADR 0012's projection of a task
(ARCHITECTURE §7; seed 001).

A thread is a signoff thread; each AG-UI run is mapped to the signoff run (the *task*) it starts
or resumes, ``{threadId, runId} → taskId``, kept as the store's notes. A held batch ends the AG-UI
run with ``RUN_FINISHED`` ``outcome: interrupt``: one interrupt per pending call, its id
``hitl-<taskId>-<n>`` (the n-th call the task held), after the assistant's words, one
``ACTIVITY_SNAPSHOT`` (``HITL_FORM``) per call and a ``STATE_DELTA``. The next AG-UI run on the
thread answers every open interrupt in ``resume[]``; its decisions go through the gate like any
other, and the task goes on in the same run log the web inbox and A2A read. That run opens with a
``MESSAGES_SNAPSHOT`` of the conversation so far: the results it streams answer calls an earlier
run streamed.

Each interrupt shows its call at a version (``metadata.version``, and ``version`` in its
``responseSchema``), which its answer sends back: an answer made on a version that changed since
(edited, voted on, in the inbox or anywhere) takes nothing, and the run ends on the open
interrupts again, each with its call as it stands, saying what changed.

The shared state is ``{"view": {"tasks": {taskId: {status, lastRunId, lastInterruptId,
summaries}}, "pendingInterrupts": {interruptId: {...}}}}``: one ``STATE_SNAPSHOT`` per run, then
``STATE_DELTA`` JSON Patches, each computed against a fresh reading of the store, so the deltas
applied to the snapshot always give what a new snapshot would.

A question an agent asks is an interrupt of reason ``question``, its resume the answer
(`questions`).

The package: `mapping` says AG-UI's words for signoff's, both ways; `threads` reads a thread's
tasks, state and conversation from the store; `agent` runs one AG-UI run, starting or resuming
its task, and `stream` follows the task's log; `transport` serves them over HTTP.
"""

from __future__ import annotations

from signoff.protocols.agui.agent import AguiAgent
from signoff.protocols.agui.mapping import ACTIVITY, interrupt_id, response_schema
from signoff.protocols.agui.threads import CHANNEL
from signoff.protocols.agui.transport import mount_agui

__all__ = ["ACTIVITY", "CHANNEL", "AguiAgent", "interrupt_id", "mount_agui", "response_schema"]
