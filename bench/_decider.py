"""The other process of bench/approvals.py: ``python bench/_decider.py URL``.

It opens the store once, prints ``ready``, then approves each approval id it reads from stdin
(one a line) and prints ``<id> <time.time() just after the decision committed>``. It exits at
the end of its input.
"""

from __future__ import annotations

import asyncio
import sys
import time

from signoff import Approve, Policy
from signoff.gate import Gate
from signoff.store import open_store

ACTOR = "bench-decider"


async def main(url: str) -> None:
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    async with open_store(url, migrate=False) as store:
        gate = Gate(Policy.from_dict({"default": "ask"}), store)
        print("ready", flush=True)
        while line := await stdin.readline():
            approval_id = line.decode().strip()
            await gate.decide(approval_id, Approve(), actor=ACTOR)
            committed_at = time.time()
            print(f"{approval_id} {committed_at!r}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
