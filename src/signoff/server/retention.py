"""The config's ``retention:``: how long signoff keeps what it no longer needs.

```yaml
retention: {audit: 365d, outbox: 7d, payloads: 30d}
```

``audit`` — audit entries older than this go, behind a signed checkpoint only (see
`signoff.store.retention`); ``outbox`` — notifications delivered longer ago; ``payloads`` — the
large messages and tool results of runs finished longer ago. A kind not named is kept forever.
``signoff prune --config FILE`` applies it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from signoff.policy.reader import Reader

__all__ = ["RetentionSettings", "read_retention"]

_KEYS = frozenset({"audit", "outbox", "payloads"})


@dataclass(frozen=True, kw_only=True)
class RetentionSettings:
    """How long each kind is kept; None: forever."""

    audit: timedelta | None = None
    outbox: timedelta | None = None
    payloads: timedelta | None = None

    @property
    def configured(self) -> bool:
        return any(bound is not None for bound in (self.audit, self.outbox, self.payloads))


def read_retention(reader: Reader, value: Any) -> RetentionSettings:
    """The ``retention:`` section; its mistakes are the reader's, with their place."""
    section = reader.section(value, "retention", _KEYS)
    if section is None:
        return RetentionSettings()
    bounds: dict[str, timedelta] = {}
    for key in sorted(_KEYS & section.keys()):
        seconds = reader.duration(section[key], ("retention", key), f"retention.{key}")
        if seconds is not None:
            bounds[key] = timedelta(seconds=seconds)
    return RetentionSettings(**bounds)
