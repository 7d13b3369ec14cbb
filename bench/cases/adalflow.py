"""AdalFlow: a `Runner` with and without `SignoffPermissions` (`frameworks.adalflow_sides`). It
keeps no run to pause — its held call waits in memory — and it patches asyncio for the whole
process (nest_asyncio): it runs last."""

from cases import Case
from frameworks import adalflow_sides

CASE = Case(
    name="AdalFlow",
    build=lambda kept, allow, ask: adalflow_sides(kept.path.parent, allow),
    lacks="its held call waits in memory: no run is kept to resume",
    last=True,
)
