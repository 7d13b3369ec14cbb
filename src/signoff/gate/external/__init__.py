"""The machinery every framework integration shares (ARCHITECTURE §6, "External runs").

A framework keeps its own state (a checkpoint, a session, a run state); signoff keeps what it
owns. `ExternalRuns` is what an integration holds: the gate that judges each call of the
framework's run — kept by (origin, thread, model response, call id), so a re-run node, a retry
or another replica gets the same verdict and the same approval —, `step`, the one place an
integration reads what to do with a call, `claim`/`once`, the one way it runs one (only the call
as allowed, approved or edited, exactly once), the pauses to resume once their calls are
decided, and decisions taken the framework's way (a LangChain ``Command(resume=...)``) recorded
as whoever sent them, or the principal configured for that. It works from synchronous code and
from any event loop (`Bridge`). A `Resumer` resumes the framework's paused runs as decisions
arrive, on any number of replicas.

The parts: `runs` (`ExternalRuns` and `connect`), standing on `base`; `verdicts` (judging),
`promise` (what to do with a call, and running it once), `pausing` (the pauses and the threads
kept in the store) and `resumer` (`Resumer`).
"""

from signoff.gate.external.resumer import LEASE, Resumer
from signoff.gate.external.runs import ExternalRuns, connect
from signoff.gate.resumed import Resumed
from signoff.gate.steps import Held, Step
from signoff.store.pauses import NewPause, Pause, PauseStatus

__all__ = [
    "LEASE",
    "ExternalRuns",
    "Held",
    "NewPause",
    "Pause",
    "PauseStatus",
    "Resumed",
    "Resumer",
    "Step",
    "connect",
]
