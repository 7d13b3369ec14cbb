"""`signoff inbox` in a pseudo-terminal, as a person types at it."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import subprocess
import time

from signoff import Policy, ToolCall
from signoff.gate import Gate
from signoff.store import open_store
from tests.deadline import HANG
from tests.processes import signoff_command


async def held(url: str) -> list[str]:
    async with open_store(url) as store:
        gate = Gate(
            Policy.from_dict({"rules": [{"ask": "delete_pod", "approvers": ["ops"]}]}), store
        )
        calls = [ToolCall(id=f"c{i}", name="delete_pod", args={"name": f"p{i}"}) for i in range(3)]
        return [o.approval.id for o in await gate.check(calls) if o.approval is not None]


async def statuses(url: str, ids: list[str]) -> list[tuple[str, str | None, dict[str, object]]]:
    async with open_store(url) as store:
        return [(a.status, a.decided_by, a.call.args) for a in await store.get_approvals(ids)]


class Terminal:
    """A child process on a pseudo-terminal: type lines, read what it shows."""

    def __init__(self, *args: str) -> None:
        self.master, slave = pty.openpty()
        env = {**os.environ, "COLUMNS": "140", "LINES": "40", "TERM": "dumb"}
        self.process = subprocess.Popen(
            [*signoff_command(), *args], stdin=slave, stdout=slave, stderr=slave,
            env=env, close_fds=True,
        )  # fmt: skip
        os.close(slave)
        self.screen = ""

    def until(self, text: str, timeout: float = HANG) -> str:
        """Everything shown from now until `text` appears."""
        start, deadline = len(self.screen), time.monotonic() + timeout
        while text not in self.screen[start:]:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} never showed; the screen: {self.screen[start:]!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    self.screen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:  # the child is gone
                    break
        return self.screen[start:]

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> int:
        code = self.process.wait(20)
        os.close(self.master)
        return code


def test_a_person_lists_approves_rejects_and_edits_in_the_terminal(store_url: str):
    ids = asyncio.run(held(store_url))
    terminal = Terminal("inbox", "--database", store_url, "--as", "olga", "--role", "ops")
    shown = terminal.until("inbox> ")
    assert "3 waiting" in shown
    assert shown.count("delete_pod") == 3
    terminal.type("approve 1")
    assert "approved by olga" in terminal.until("inbox> ")
    terminal.type("reject 1 p1 serves traffic")
    assert "rejected by olga" in terminal.until("inbox> ")
    terminal.type("edit 1 {not json}")
    assert "the arguments are not JSON" in terminal.until("inbox> ")
    terminal.type('edit 1 {"name": "p9"}')
    assert "edited by olga" in terminal.until("inbox> ")
    terminal.type("list")
    assert "nothing waits for a decision" in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0
    # Newest first: #1 was p2, then p1, then p0 (edited to p9).
    assert asyncio.run(statuses(store_url, ids)) == [
        ("edited", "olga", {"name": "p9"}),
        ("rejected", "olga", {"name": "p1"}),
        ("approved", "olga", {"name": "p2"}),
    ]


def test_the_rule_s_roles_hold_in_the_terminal_too(store_url: str):
    asyncio.run(held(store_url))
    terminal = Terminal("inbox", "--database", store_url, "--as", "bob")
    terminal.until("inbox> ")
    terminal.type("approve 1")
    assert "needs one of the roles ['ops']" in terminal.until("inbox> ")
    terminal.type("show 1")
    assert '"status": "pending"' in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0
