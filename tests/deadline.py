"""How long a test waits for something before it calls it a hang.

Generous on purpose, and the same everywhere: a test proves what happened, and in what order, by
events — never by how fast this machine is. This bound only stops a test that is stuck; one that
is merely slow (a loaded two-core machine runs the suite beside other work) must still pass.
How fast things are is measured in ``bench/``.
"""

HANG = 120.0
"""Seconds: a wait this long is a hang, not a slow machine."""
