"""`signoff inbox` in a pseudo-terminal, as a person types at it."""

from __future__ import annotations

import asyncio
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

from signoff import Approve, Edit, Policy, ToolCall
from signoff.cli import app
from signoff.cli.inbox import PAGE
from signoff.gate import CheckContext, Gate
from signoff.store import open_store
from tests.deadline import HANG
from tests.processes import signoff_command, signoff_server

POLICY = Policy.from_dict({"rules": [{"ask": "delete_pod", "approvers": ["ops"]}]})
ROW = re.compile(r"│ (\d+) +│ (\w+) +│ delete_pod +│ \{\"name\": \"(\w+)\"\}")


async def held(url: str, *names: str) -> list[str]:
    """Hold a `delete_pod` of each name, in one batch: the approvals' ids, in that order."""
    calls = [ToolCall(id=f"c-{n}", name="delete_pod", args={"name": n}) for n in names]
    async with open_store(url) as store:
        return [o.approval.id for o in await Gate(POLICY, store).check(calls) if o.approval]


async def approved_elsewhere(url: str, approval_id: str, actor: str) -> None:
    async with open_store(url) as store:
        await Gate(POLICY, store).decide(approval_id, Approve(), actor=actor, roles=["ops"])


async def statuses(url: str, ids: list[str]) -> list[tuple[str, str | None, dict[str, object]]]:
    async with open_store(url) as store:
        return [(a.status, a.decided_by, a.call.args) for a in await store.get_approvals(ids)]


def rows(screen: str) -> dict[int, tuple[str, str]]:
    """The last table on the screen: each number's short id and pod name."""
    table = screen.rpartition(" waiting")[2]
    return {int(n): (short, name) for n, short, name in ROW.findall(table)}


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
    ids = asyncio.run(held(store_url, "p0", "p1", "p2"))
    terminal = Terminal("inbox", "--database", store_url, "--as", "olga", "--role", "ops")
    shown = terminal.until("inbox> ")
    assert "3 waiting" in shown
    # Numbered in the order the calls came; each shows the end of its id.
    assert rows(shown) == {n: (ids[n - 1][-8:], f"p{n - 1}") for n in (1, 2, 3)}
    terminal.type("approve 1")
    assert "#1 " + ids[0][-8:] + " delete_pod: approved by olga" in terminal.until("inbox> ")
    terminal.type("reject 2 p1 serves traffic")
    assert "rejected by olga" in terminal.until("inbox> ")
    terminal.type("edit 3 {not json}")
    assert "the arguments are not JSON" in terminal.until("inbox> ")
    terminal.type('edit 3 {"name": "p9"}')
    assert "edited by olga" in terminal.until("inbox> ")
    terminal.type("list")
    assert "nothing waits for a decision" in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0
    assert asyncio.run(statuses(store_url, ids)) == [
        ("approved", "olga", {"name": "p0"}),
        ("rejected", "olga", {"name": "p1"}),
        ("edited", "olga", {"name": "p9"}),
    ]


def test_a_number_typed_from_the_table_before_a_decision_hits_the_call_it_showed(store_url: str):
    """Issue 16 item 10: after #1 was decided, #2 from the old table hit the call that moved up."""
    ids = asyncio.run(held(store_url, "p0", "p1", "p2", "p3"))
    terminal = Terminal("inbox", "--database", store_url, "--as", "olga", "--role", "ops")
    first = rows(terminal.until("inbox> "))
    assert [name for _, name in first.values()] == ["p0", "p1", "p2", "p3"]
    terminal.type("approve 1")
    assert rows(terminal.until("inbox> ")) == {n: first[n] for n in (2, 3, 4)}
    terminal.type("reject 2 p1 serves traffic")  # the person still reads the first table
    after = terminal.until("inbox> ")
    assert "#2 " + ids[1][-8:] + " delete_pod: rejected by olga" in after
    assert rows(after) == {n: first[n] for n in (3, 4)}
    terminal.type("respond 3 p2 is already gone")
    assert "responded by olga" in terminal.until("inbox> ")
    terminal.type("approve 1")
    assert "error: #1 (delete_pod) was already approved by olga" in terminal.until("inbox> ")
    terminal.type("reject 2 again")
    assert "error: #2 (delete_pod) was already rejected by olga" in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0
    assert asyncio.run(statuses(store_url, ids)) == [
        ("approved", "olga", {"name": "p0"}),
        ("rejected", "olga", {"name": "p1"}),
        ("responded", "olga", {"name": "p2"}),
        ("pending", None, {"name": "p3"}),
    ]


def test_a_number_whose_call_was_decided_elsewhere_is_refused_and_not_passed_on(store_url: str):
    ids = asyncio.run(held(store_url, "p0", "p1", "p2"))
    terminal = Terminal("inbox", "--database", store_url, "--as", "olga", "--role", "ops")
    first = rows(terminal.until("inbox> "))
    asyncio.run(approved_elsewhere(store_url, ids[0], "alice"))  # #1, in the web inbox say
    terminal.type("reject 1 no")
    assert "error: #1 (delete_pod) was already approved by alice" in terminal.until("inbox> ")
    terminal.type("list")
    assert rows(terminal.until("inbox> ")) == {n: first[n] for n in (2, 3)}
    terminal.type("quit")
    assert terminal.close() == 0
    assert asyncio.run(statuses(store_url, ids)) == [
        ("approved", "alice", {"name": "p0"}),
        ("pending", None, {"name": "p1"}),
        ("pending", None, {"name": "p2"}),
    ]


def test_calls_that_arrive_later_get_the_next_numbers_once_listed(store_url: str):
    ids = asyncio.run(held(store_url, "p0", "p1"))
    terminal = Terminal("inbox", "--database", store_url, "--as", "olga", "--role", "ops")
    first = rows(terminal.until("inbox> "))
    [late] = asyncio.run(held(store_url, "p2"))
    terminal.type("approve 3")  # not listed yet: no number names it
    assert "error: no #3 has been listed; see `list`" in terminal.until("inbox> ")
    terminal.type("approve 1")
    after = rows(terminal.until("inbox> "))  # the list after the decision shows the newcomer
    assert after == {2: first[2], 3: (late[-8:], "p2")}
    terminal.type(f"approve {late[-8:]}")  # the short id works as well as the number
    assert "#3 " + late[-8:] + " delete_pod: approved by olga" in terminal.until("inbox> ")
    terminal.type("show 3")
    assert '"status": "approved"' in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0
    assert [s for s, _, _ in asyncio.run(statuses(store_url, [*ids, late]))] == [
        "approved",
        "pending",
        "approved",
    ]


def test_the_short_id_the_inbox_shows_is_what_approve_and_reject_take(store_url: str):
    ids = asyncio.run(held(store_url, "p0", "p1"))
    terminal = Terminal("inbox", "--database", store_url)
    shown = rows(terminal.until("inbox> "))
    terminal.type("quit")
    assert terminal.close() == 0
    (first, _), (second, _) = shown[1], shown[2]
    decider = ("--database", store_url, "--as", "olga", "--role", "ops")
    approved = signoff("approve", first, *decider)
    assert approved == (0, f"{ids[0]}: approved by olga (delete_pod)\n")
    rejected = signoff("reject", second, "--reason", "p1 serves traffic", *decider)
    assert rejected == (0, f"{ids[1]}: rejected by olga (delete_pod)\n")


def signoff(*args: str) -> tuple[int, str]:
    done = subprocess.run([*signoff_command(), *args], capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


def test_the_rule_s_roles_hold_in_the_terminal_too(store_url: str):
    asyncio.run(held(store_url, "p0", "p1", "p2"))
    terminal = Terminal("inbox", "--database", store_url, "--as", "bob")
    terminal.until("inbox> ")
    terminal.type("approve 1")
    assert "needs one of the roles ['ops']" in terminal.until("inbox> ")
    terminal.type("show 1")
    assert '"status": "pending"' in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0


async def held_elsewhere(url: str) -> list[str]:
    """A LangGraph run's call, and one of a framework signoff has no name for: their ids."""
    asked = [
        (
            ToolCall(
                id="c1", name="send_email", args={"to": "bob"}, agent="coordinator/researcher"
            ),
            CheckContext(origin="langgraph", thread_id="t-42", requested_by="alice"),
        ),
        (
            ToolCall(id="c1", name="send_email", args={"to": "eve"}),
            CheckContext(origin="homegrown", thread_id="t-7"),
        ),
    ]
    async with open_store(url) as store:
        gate = Gate(POLICY, store)
        held = [(await gate.hold_external([c], context))[0] for c, context in asked]
    return [o.approval.id for o in held if o.approval]


def test_another_framework_s_calls_show_their_thread_agent_and_origin(store_url: str):
    ids = asyncio.run(held_elsewhere(store_url))
    terminal = Terminal("inbox", "--database", store_url, "--as", "olga")
    shown = terminal.until("inbox> ")
    assert "2 waiting" in shown
    table = shown.rpartition(" waiting")[2]
    assert re.search(
        r"│ 1 +│ " + ids[0][-8:] + r" +│ send_email +│ \{\"to\": \"bob\"\} +│ "
        r"thread t-42 · agent coordinator/researcher · via LangGraph +│",
        table,
    ), table
    assert re.search(r"│ 2 +│ " + ids[1][-8:] + r" +│ .* +│ thread t-7 · via homegrown +│", table)
    terminal.type("approve 1 always run")
    assert "belongs to no run" in terminal.until("inbox> ")
    terminal.type("approve 2 always thread")
    assert "names no requester" in terminal.until("inbox> ")
    terminal.type("approve 1 always thread for-ever")
    assert "only any-args may follow the scope" in terminal.until("inbox> ")
    terminal.type("approve 1 always thread")
    approved = " ".join(terminal.until("inbox> ").split())
    assert "#1 " + ids[0][-8:] + " send_email: approved by olga" in approved
    assert (
        "grant: from now on send_email of agent coordinator/researcher with exactly the "
        'arguments {"to": "bob"} runs without asking in thread t-42, when alice requests it'
    ) in approved
    terminal.type("quit")
    assert terminal.close() == 0
    assert asyncio.run(statuses(store_url, ids)) == [
        ("approved", "olga", {"to": "bob"}),
        ("pending", None, {"to": "eve"}),
    ]


def test_the_list_comes_a_page_at_a_time_and_more_shows_the_calls_that_waited_longer(
    store_url: str,
):
    ids = asyncio.run(held(store_url, *(f"p{i}" for i in range(PAGE + 3))))
    terminal = Terminal("inbox", "--database", store_url, "--as", "olga", "--role", "ops")
    newest = terminal.until("inbox> ")
    assert f"page 1: {PAGE} waiting" in newest
    assert f"more calls waited longer: `more` lists the next {PAGE}" in newest
    first = {n: (ids[n + 2][-8:], f"p{n + 2}") for n in range(1, PAGE + 1)}
    assert rows(newest) == first  # the newest, numbered in the order they came
    terminal.type("more")
    older = terminal.until("inbox> ")
    assert "page 2: 3 waiting" in older and "`more` lists" not in older
    assert rows(older) == {PAGE + 1 + i: (ids[i][-8:], f"p{i}") for i in range(3)}
    terminal.type(f"approve {PAGE + 2}")
    after = terminal.until("inbox> ")
    assert f"#{PAGE + 2} {ids[1][-8:]} delete_pod: approved by olga" in after
    assert "page 2: 2 waiting" in after  # the page on screen, as it is now
    assert rows(after) == {PAGE + 1: (ids[0][-8:], "p0"), PAGE + 3: (ids[2][-8:], "p2")}
    terminal.type("more")
    assert "error: no more calls wait past this page" in terminal.until("inbox> ")
    terminal.type(f"reject {PAGE + 1} p0 serves traffic")
    terminal.until("inbox> ")
    terminal.type(f"approve {PAGE + 3}")  # the last call on its page
    emptied = terminal.until("inbox> ")
    assert "nothing waits there any more; the newest:" in emptied
    assert f"\n{PAGE} waiting" in emptied and "page 1" not in emptied  # all left: one page
    assert rows(emptied) == first
    terminal.type("quit")
    assert terminal.close() == 0
    assert [s for s, _, _ in asyncio.run(statuses(store_url, ids[:4]))] == [
        "rejected",
        "approved",
        "approved",
        "pending",
    ]


async def test_through_a_server_the_inbox_pages_with_the_api_s_cursor(tmp_path: Path):
    database = f"sqlite:///{tmp_path / 'signoff.db'}"
    ids = await held(database, *(f"p{i}" for i in range(PAGE + 2)))
    config = tmp_path / "signoff.yaml"
    config.write_text(
        f"database: {database}\n"
        "auth:\n  tokens:\n    - {principal: olga, roles: [ops], token_env: SIGNOFF_TEST_TOKEN}\n"
        "rules:\n  - {ask: delete_pod, approvers: [ops]}\n"
    )
    env = {**os.environ, "SIGNOFF_TEST_TOKEN": "t0ken"}
    serving = signoff_server("serve", "--config", str(config), "--port", "0", env=env)
    async with serving as (url, _):
        terminal = Terminal("inbox", "--server", url, "--token", "t0ken")
        assert f"page 1: {PAGE} waiting" in terminal.until("inbox> ")
        terminal.type("more")
        older = terminal.until("inbox> ")
        assert rows(older) == {PAGE + 1: (ids[0][-8:], "p0"), PAGE + 2: (ids[1][-8:], "p1")}
        terminal.type(f"approve {PAGE + 1}")
        after = terminal.until("inbox> ")
        assert f"#{PAGE + 1} {ids[0][-8:]} delete_pod: approved by olga" in after
        assert rows(after) == {PAGE + 2: (ids[1][-8:], "p1")}
        terminal.type("quit")
        assert terminal.close() == 0


def test_the_help_and_the_docs_say_how_many_calls_a_page_lists():
    shown = " ".join(CliRunner().invoke(app, ["inbox", "--help"]).output.split())
    assert f"It lists the newest {PAGE} calls waiting; `more` lists the {PAGE} before" in shown
    docs = " ".join((Path(__file__).parents[2] / "docs" / "server.md").read_text().split())
    assert f"the newest {PAGE} calls waiting, then with `more` the {PAGE} that" in docs


async def reasons(url: str, ids: list[str]) -> list[str | None]:
    async with open_store(url) as store:
        return [getattr(a.decision, "reason", None) for a in await store.get_approvals(ids)]


def test_reject_takes_its_reason_as_signoff_reject_does_after_the_number_or_after_reason(
    store_url: str,
):
    ids = asyncio.run(held(store_url, "p0", "p1", "p2"))
    terminal = Terminal("inbox", "--database", store_url, "--as", "olga", "--role", "ops")
    terminal.until("inbox> ")
    terminal.type("reject 1 p0 serves traffic")
    assert "rejected by olga" in terminal.until("inbox> ")
    terminal.type('reject 2 --reason "p1 serves traffic"')
    assert "rejected by olga" in terminal.until("inbox> ")
    terminal.type("reject 3 --reason")
    assert "reject N REASON: the model reads the reason" in terminal.until("inbox> ")
    terminal.type("reject 3 --reason=p2 serves traffic")
    assert "rejected by olga" in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0
    assert asyncio.run(reasons(store_url, ids)) == [f"p{n} serves traffic" for n in range(3)]


async def held_with_a_preview(url: str) -> str:
    """A `delete_pod` held with the rows its preview says it would touch: the approval's id."""
    from signoff.gate.preview import Previews

    previews = Previews({"delete_pod": lambda name: [{"pod": name, "node": "n1"}]})
    async with open_store(url) as store:
        outcomes, _ = await Gate(POLICY, store).hold(
            [ToolCall(id="c-web", name="delete_pod", args={"name": "web-1"})], previews=previews
        )
        [approval] = [o.approval for o in outcomes if o.approval]
        return approval.id


def test_show_prints_what_the_call_would_change_as_text(store_url: str):
    asyncio.run(held_with_a_preview(store_url))
    terminal = Terminal("inbox", "--database", store_url, "--as", "olga", "--role", "ops")
    terminal.until("inbox> ")
    terminal.type("show 1")
    assert "preview: pod: web-1, node: n1" in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0


FOUR_EYES = Policy.from_dict({"rules": [{"ask": "pay", "approvals": {"count": 2}}]})


async def paid(url: str, **args: object) -> str:
    """Hold a `pay` call that needs two people's approval."""
    async with open_store(url) as store:
        [held] = await Gate(FOUR_EYES, store).check([ToolCall(id="p", name="pay", args=args)])
    assert held.approval is not None
    return held.approval.id


async def edited_elsewhere(url: str, approval_id: str, actor: str, **args: object) -> None:
    async with open_store(url) as store:
        await Gate(FOUR_EYES, store).decide(approval_id, Edit(args=args), actor=actor, version=1)


def refused_and_shown_again(terminal: Terminal, approval_id: str) -> None:
    """Type ``approve 1`` at a list made before olga's edit: refused, naming it, and the call
    shown again as it is now; ``approve 1`` again decides on that."""
    terminal.type("approve 1")
    screen = " ".join(terminal.until("inbox> ").split())
    # (Through a server, after the server's address: "http://…: said 409: approval …")
    assert re.search(
        f"not decided: (.* said 409: )?approval '{approval_id}' changed since version 1", screen
    ), screen
    assert "edited by olga" in screen and "amount 100 → 999999" in screen
    assert f"#1 {approval_id[-8:]} pay, as it is now (version 2, edited by olga):" in screen
    assert 'runs with: {"amount": 999999, "to": "mallory"}' in screen
    assert 'requested: {"amount": 100, "to": "bob"}' in screen
    assert "approvals: olga (1 of 2)" in screen
    terminal.type("approve 1")
    assert f"#1 {approval_id[-8:]} pay: edited by bob" in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0


def test_a_decision_on_a_call_edited_since_it_was_listed_is_refused_and_shown_again(store_url: str):
    approval_id = asyncio.run(paid(store_url, amount=100, to="bob"))
    terminal = Terminal("inbox", "--database", store_url, "--as", "bob")
    listed = terminal.until("inbox> ")
    assert re.search(r"│ 1 +│ \w+ +│ pay +│ \{\"amount\": 100, \"to\": \"bob\"\} .*│ 1 +│", listed)
    asyncio.run(edited_elsewhere(store_url, approval_id, "olga", amount=999999, to="mallory"))
    refused_and_shown_again(terminal, approval_id)

    async def read() -> tuple[str, dict[str, object], list[str]]:
        async with open_store(store_url) as store:
            approval = await store.get_approval(approval_id)
        return approval.status, approval.call.args, [v.by for v in approval.votes]

    assert asyncio.run(read()) == ("edited", {"amount": 999999, "to": "mallory"}, ["olga", "bob"])


async def test_through_a_server_the_inbox_sends_the_version_it_listed(tmp_path: Path):
    database = f"sqlite:///{tmp_path / 'signoff.db'}"
    approval_id = await paid(database, amount=100, to="bob")
    config = tmp_path / "signoff.yaml"
    config.write_text(
        f"database: {database}\n"
        "auth:\n  tokens:\n"
        "    - {principal: olga, token_env: SIGNOFF_TEST_TOKEN}\n"
        "    - {principal: bob, token_env: SIGNOFF_TEST_TOKEN_BOB}\n"
        "rules:\n  - {ask: pay, approvals: {count: 2}}\n"
    )
    env = {**os.environ, "SIGNOFF_TEST_TOKEN": "t0ken", "SIGNOFF_TEST_TOKEN_BOB": "b0b"}
    serving = signoff_server("serve", "--config", str(config), "--port", "0", env=env)
    async with serving as (url, _), httpx.AsyncClient(base_url=url, timeout=HANG) as client:
        terminal = Terminal("inbox", "--server", url, "--token", "b0b")
        assert "1 waiting" in terminal.until("inbox> ")
        edit = {"kind": "edit", "args": {"amount": 999999, "to": "mallory"}, "version": 1}
        olga = {"Authorization": "Bearer t0ken"}
        answer = await client.post(f"/v1/approvals/{approval_id}/decision", json=edit, headers=olga)
        assert answer.status_code == 200, answer.text
        await asyncio.to_thread(refused_and_shown_again, terminal, approval_id)
        approval = (await client.get(f"/v1/approvals/{approval_id}", headers=olga)).json()
    assert (approval["status"], approval["decided_by"]) == ("edited", "bob")


async def asked(url: str) -> list[str]:
    """Hold a question with choices and one with a form: their approvals' ids."""
    form = {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}}
    calls = [
        ToolCall(id="q1", name="ask_person", kind="question",
                 args={"question": "Region?", "choices": ["eu", "us"]}),
        ToolCall(id="q2", name="ask_person", kind="question",
                 args={"question": "Bill to?", "schema": form}),
    ]  # fmt: skip
    async with open_store(url) as store:
        return [o.approval.id for o in await Gate(POLICY, store).check(calls) if o.approval]


def test_a_question_shows_as_a_question_and_is_answered_in_the_terminal(store_url: str):
    ids = asyncio.run(asked(store_url))
    terminal = Terminal("inbox", "--database", store_url, "--as", "olga")
    table = terminal.until("inbox> ").rpartition(" waiting")[2]
    assert re.search(r"│ 1 +│ \w+ +│ question ask_person +│ Region\? \(one of: eu \| us\)", table)
    assert re.search(r"│ 2 +│ \w+ +│ question ask_person +│ Bill to\? \(a form: email\)", table)
    terminal.type("approve 1")
    assert "a question is answered, not approved" in terminal.until("inbox> ")
    terminal.type("answer 1 mars")
    assert "answer: not one of ['eu', 'us']" in terminal.until("inbox> ")
    terminal.type("answer 1 eu")
    assert "ask_person: answered by olga" in terminal.until("inbox> ")
    terminal.type('answer 2 --json {"email": "ap@example.com"}')
    assert "answered by olga" in terminal.until("inbox> ")
    terminal.type("quit")
    assert terminal.close() == 0
    assert [s for s, _, _ in asyncio.run(statuses(store_url, ids))] == ["answered", "answered"]
