"""The config's ``hooks:``: how long a coding agent's held call waits for a person, and what
the agent is told when nobody decided by then.

```yaml
hooks:
  wait: 5m            # below the hook's own timeout (`signoff hook install` sets it 30 s above)
  on_timeout: ask     # ask: the agent's own prompt at its terminal; deny: it does not run
                      # (Gemini CLI is always told deny: `gemini -p` waits on `ask` forever)
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from signoff.policy.reader import Reader

__all__ = ["MOST_WAIT", "HookSettings", "read_hooks"]

_KEYS = frozenset({"wait", "on_timeout"})
MOST_WAIT = 3600.0
"""The longest a hook's request may be held open (an hour)."""


@dataclass(frozen=True, kw_only=True)
class HookSettings:
    wait: float = 300.0
    on_timeout: Literal["ask", "deny"] = "ask"


def read_hooks(reader: Reader, value: Any) -> HookSettings:
    """The ``hooks:`` section; its mistakes are the reader's, with their place."""
    section = None if value is None else reader.mapping(value, ("hooks",), "hooks")
    if not section:
        return HookSettings()
    reader.keys(section, ("hooks",), _KEYS, "hooks")
    settings = HookSettings()
    if "wait" in section:
        wait = reader.duration(section["wait"], ("hooks", "wait"), "hooks.wait")
        if wait is not None and not 0 < wait <= MOST_WAIT:
            reader.error(("hooks", "wait"), "hooks.wait must be above 0 and at most 1h")
        elif wait is not None:
            settings = HookSettings(wait=wait)
    on_timeout = section.get("on_timeout")
    if on_timeout is not None:
        if on_timeout not in ("ask", "deny"):
            reader.error(("hooks", "on_timeout"), "hooks.on_timeout must be ask or deny")
        else:
            settings = HookSettings(wait=settings.wait, on_timeout=on_timeout)
    return settings
