"""A second process for the external runs' tests: `python external_worker.py COMMAND URL ...`.

Each command opens the store, says ``ready`` and waits for a ``go`` line on its standard input,
so that the test starts two of them at the same moment.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

from signoff import Policy, ToolCall
from signoff.gate import CheckContext, Gate
from signoff.gate.once import Ledger
from signoff.store import SQLStore, Store, open_store
from signoff.store.external import LedgerClaim

POLICY = Policy.from_dict({"default": "ask"})


async def line() -> str:
    said: str = await asyncio.to_thread(sys.stdin.readline)
    return said.strip()


def say(*words: object) -> None:
    print(*words, flush=True)


async def hold(url: str, thread: str, count: int) -> None:
    """Judge calls c0 … c<count-1> of `thread`, all at once; print each one's approval id and
    whether it was judged before."""
    async with open_store(url, migrate=False) as store:
        gate = Gate(POLICY, store)
        context = CheckContext(origin="langgraph", thread_id=thread, requested_by="bob")
        say("ready")
        assert await line() == "go"
        calls = [ToolCall(id=f"c{i}", name="send_email", args={"n": i}) for i in range(count)]
        judged = await asyncio.gather(*(gate.hold_external([c], context) for c in calls))
        say(json.dumps([[o.call.id, o.approval and o.approval.id, o.recorded]
                        for [o] in judged]))  # fmt: skip


class Watched:
    """The store, saying ``waiting`` (once) when a claim finds the key started by another."""

    def __init__(self, store: SQLStore) -> None:
        self._store = store
        self._said = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def ledger_claim(self, key: str, **options: Any) -> LedgerClaim:
        found = await self._store.ledger_claim(key, **options)
        if not found.claimed and found.status == "started" and not self._said:
            self._said = True
            say("waiting")
        return found


async def once(url: str, key: str, count_file: str, then: str) -> None:
    """`Ledger.once(key)` with a call that adds a line to `count_file`, says ``running`` and
    then returns when told ``finish`` — or, with `then` ``hang``, never (to be killed there)."""
    async with open_store(url, migrate=False) as store:
        # An hour's lease: only the check of its process can tell that this worker died.
        ledger = Ledger(cast(Store, Watched(store)), lease=timedelta(hours=1), poll_interval=0.02)
        say("ready")
        assert await line() == "go"

        async def call() -> dict[str, Any]:
            with Path(count_file).open("a") as counted:
                counted.write("ran\n")
            say("running")
            if then == "hang":
                await asyncio.Event().wait()
            assert await line() == "finish"
            return {"sent": True}

        say(json.dumps(await ledger.once(key, call)))


if __name__ == "__main__":
    match sys.argv[1:]:
        case ["hold", url, thread, count]:
            asyncio.run(hold(url, thread, int(count)))
        case ["once", url, key, count_file, then]:
            asyncio.run(once(url, key, count_file, then))
        case other:
            sys.exit(f"unknown command {other!r}")
