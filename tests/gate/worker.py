"""A second process for the cross-process tests: `python worker.py COMMAND URL ...`."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from signoff import Approve, ConflictError, Policy, Reject
from signoff.gate import Gate
from signoff.store import open_store

POLICY = Policy.from_dict({"default": "ask"})


async def race(url: str, approval_id: str, tag: str, count: int) -> None:
    """Take `count` different decisions at once; print how many won and lost."""
    async with open_store(url, migrate=False) as store:
        gate = Gate(POLICY, store)
        decisions = [Approve() if i % 2 else Reject(reason=f"{tag}-{i}") for i in range(count)]
        results = await asyncio.gather(
            *(gate.decide(approval_id, d, actor=f"{tag}{i}") for i, d in enumerate(decisions)),
            return_exceptions=True,
        )
        conflicts = sum(isinstance(r, ConflictError) for r in results)
        others = [
            repr(r)
            for r in results
            if isinstance(r, BaseException) and not isinstance(r, ConflictError)
        ]
        print(
            json.dumps(
                {"ok": count - conflicts - len(others), "conflicts": conflicts, "errors": others}
            )
        )


async def decide(url: str, approval_id: str) -> None:
    """Approve one approval and print the wall-clock time just after it committed."""
    async with open_store(url, migrate=False) as store:
        await Gate(POLICY, store).decide(approval_id, Approve(), actor="process-b")
        print(json.dumps({"committed_at": time.time()}), flush=True)


async def decide_all(url: str) -> None:
    """Approve every pending approval, one transaction each, printing progress (to be killed)."""
    async with open_store(url, migrate=False) as store:
        gate = Gate(POLICY, store)
        for approval in await store.list_approvals(status="pending", limit=10_000):
            await gate.decide(approval.id, Approve(), actor="doomed")
            print(approval.id, flush=True)


if __name__ == "__main__":
    match sys.argv[1:]:
        case ["race", url, approval_id, tag, count]:
            asyncio.run(race(url, approval_id, tag, int(count)))
        case ["decide", url, approval_id]:
            asyncio.run(decide(url, approval_id))
        case ["decide_all", url]:
            asyncio.run(decide_all(url))
        case other:
            sys.exit(f"unknown command {other!r}")
