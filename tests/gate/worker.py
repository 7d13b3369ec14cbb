"""A second process for the cross-process tests: `python worker.py COMMAND URL ...`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable, Sequence

from signoff import Approve, ConflictError, Policy, Reject
from signoff.gate import Gate
from signoff.store import open_store
from signoff.store.base import DecisionPlan, Moment
from signoff.types import Approval

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
    """Approve one approval."""
    async with open_store(url, migrate=False) as store:
        await Gate(POLICY, store).decide(approval_id, Approve(), actor="process-b")


async def decide_all(url: str, count: int) -> None:
    """Approve `count` pending approvals, one transaction each, printing each id as it commits;
    then stop (SIGSTOP) inside the next one's transaction, before it commits, and say so: to be
    killed there."""
    async with open_store(url, migrate=False) as store:
        gate = Gate(POLICY, store)
        pending = await store.list_approvals(status="pending", limit=10_000)
        for approval in pending[:count]:
            await gate.decide(approval.id, Approve(), actor="doomed")
            print(approval.id, flush=True)
        decide = store.decide

        async def decide_and_stop(
            approval_ids: Sequence[str], plan: Callable[[list[Approval], Moment], DecisionPlan]
        ) -> DecisionPlan:
            def planned(current: list[Approval], moment: Moment) -> DecisionPlan:  # in it
                made = plan(current, moment)
                print("deciding", current[0].id, flush=True)
                os.kill(os.getpid(), signal.SIGSTOP)
                return made

            return await decide(approval_ids, planned)

        store.decide = decide_and_stop  # type: ignore[method-assign]
        await gate.decide(pending[count].id, Approve(), actor="doomed")


if __name__ == "__main__":
    match sys.argv[1:]:
        case ["race", url, approval_id, tag, count]:
            asyncio.run(race(url, approval_id, tag, int(count)))
        case ["decide", url, approval_id]:
            asyncio.run(decide(url, approval_id))
        case ["decide_all", url, count]:
            asyncio.run(decide_all(url, int(count)))
        case other:
            sys.exit(f"unknown command {other!r}")
