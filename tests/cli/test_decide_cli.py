"""`signoff approve` and `signoff reject`, straight on a database (through a server: see
tests/server/test_demo.py), each on the version of the approval looked at (``--version``); and
what the commands send a server, to a stand-in for one."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from signoff import Answer, Approve, Edit, Policy, Reject, ToolCall
from signoff.cli.client import on_server, through_server
from signoff.errors import NotFoundError, SignoffError, StaleDecisionError
from signoff.gate import CheckContext, Gate
from signoff.store import open_store
from signoff.types import Approval
from tests.cli.test_inbox_cli import reasons
from tests.processes import signoff_command, signoff_server, typed_here


def signoff(*args: str) -> tuple[int, str, str]:
    result = subprocess.run(
        [*signoff_command(), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    return result.returncode, result.stdout, " ".join(result.stderr.split())


async def held(url: str, count: int) -> list[str]:
    async with open_store(url) as store:
        gate = Gate(
            Policy.from_dict({"rules": [{"ask": "delete_pod", "approvers": ["ops"]}]}), store
        )
        calls = [
            ToolCall(id=f"c{i}", name="delete_pod", args={"name": f"p{i}"}) for i in range(count)
        ]
        return [o.approval.id for o in await gate.check(calls) if o.approval is not None]


def test_approve_and_reject_on_a_database_as_a_named_decider(store_url: str):
    first, second = asyncio.run(held(store_url, 2))
    code, out, err = signoff(
        "approve", first, "--database", store_url, "--as", "olga", "--role", "ops"
    )
    assert (code, out, err) == (0, f"{first}: approved by olga (delete_pod)\n", "")
    code, out, _ = signoff(
        "reject", second, "--reason", "p1 serves traffic", "--database", store_url,
        "--as", "olga", "--role", "ops",
    )  # fmt: skip
    assert (code, out) == (0, f"{second}: rejected by olga (delete_pod)\n")
    # A different decision afterwards is refused, and says why.
    code, out, err = signoff(
        "reject", first, "--reason", "no", "--database", store_url, "--role", "ops"
    )
    assert code == 1
    assert "already approved" in err or "conflict" in err.lower(), err


async def decided_at(url: str, approval_id: str) -> str:
    async with open_store(url) as store:
        moment = (await store.get_approval(approval_id)).decided_at
    assert moment is not None
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def test_a_decision_on_a_call_no_longer_pending_says_how_it_was_decided_and_fails(
    store_url: str,
):
    first, second = asyncio.run(held(store_url, 2))
    decider = ("--database", store_url, "--as", "olga", "--role", "ops")
    assert signoff("approve", first, *decider)[0] == 0
    when = asyncio.run(decided_at(store_url, first))
    already = f"error: {first} (delete_pod): already approved by olga at {when}; nothing changed"
    assert signoff("approve", first, *decider) == (1, "", already)
    assert signoff("approve", first[-8:], *decider, "--as", "bob") == (1, "", already)
    assert signoff("reject", first, "no", *decider) == (1, "", already)
    assert signoff("reject", second, "no", *decider)[0] == 0
    when = asyncio.run(decided_at(store_url, second))
    assert signoff("approve", second, *decider) == (
        1, "", f"error: {second} (delete_pod): already rejected by olga at {when}; nothing changed",
    )  # fmt: skip


def test_approve_and_reject_take_a_short_id_the_end_of_the_approval_s_id(store_url: str):
    first, second = asyncio.run(held(store_url, 2))
    decider = ("--database", store_url, "--as", "olga", "--role", "ops")
    code, out, err = signoff("approve", first[-8:], *decider)
    assert (code, out, err) == (0, f"{first}: approved by olga (delete_pod)\n", "")
    code, out, err = signoff("reject", second[-12:], "p1 serves traffic", *decider)
    assert (code, out, err) == (0, f"{second}: rejected by olga (delete_pod)\n", "")


def test_reject_takes_its_reason_after_the_id_or_after_reason_as_the_inbox_does(store_url: str):
    first, second, third = asyncio.run(held(store_url, 3))
    decider = ("--database", store_url, "--as", "olga", "--role", "ops")
    assert signoff("reject", first, "p0 serves traffic", *decider)[0] == 0
    assert signoff("reject", second, "--reason", "p1 serves traffic", *decider)[0] == 0
    code, out, err = signoff("reject", third, "one", "--reason", "another", *decider)
    assert (code, out) == (2, "")
    assert "Invalid value for REASON: give the reason once" in err
    code, out, err = signoff("reject", third, *decider)
    assert (code, out) == (2, "")
    assert "Invalid value for REASON: why? the agent's model reads it" in err
    code, help_text, _ = signoff("reject", "--help")
    assert "reject [OPTIONS] {ID} [REASON]" in help_text
    assert "--reason" not in help_text  # one form shown: the inbox's
    assert asyncio.run(reasons(store_url, [first, second, third])) == [
        "p0 serves traffic", "p1 serves traffic", None,
    ]  # fmt: skip


# Two approvals whose ids end alike, as two made in different milliseconds may, once in 2**32.
TWINS = ["0193aaaaaaaa" + "0" * 8 + "0000deadbeef", "0193bbbbbbbb" + "1" * 8 + "1111deadbeef"]


async def twins(url: str) -> None:
    approvals = [
        Approval(
            id=approval_id,
            call=ToolCall(id=f"c{n}", name="delete_pod", args={"name": f"p{n}"}),
            batch_id=f"b{n}",
            rule="rules[0]",
            reason="approval required: delete_pod",
            requested_at=datetime.now(UTC),
        )
        for n, approval_id in enumerate(TWINS)
    ]
    async with open_store(url) as store:
        await store.create_approvals(approvals)


async def pending(url: str) -> list[str]:
    async with open_store(url) as store:
        return sorted(a.id for a in await store.list_approvals(status="pending"))


def test_a_short_id_that_names_several_approvals_or_none_decides_nothing(store_url: str):
    asyncio.run(twins(store_url))
    database = ("--database", store_url, "--as", "olga")
    code, out, err = signoff("approve", "deadbeef", *database)
    assert (code, out) == (1, "")
    assert (
        f"'deadbeef' ends the ids of more than one approval: {TWINS[1]} (delete_pod, pending); "
        f"{TWINS[0]} (delete_pod, pending). Give more of the id; nothing was decided"
    ) in err
    code, out, err = signoff("reject", "12345678", "--reason", "no", *database)
    assert (code, out) == (1, "")
    assert "no approval's id ends with '12345678'" in err
    code, out, err = signoff("approve", "3", *database)  # an inbox number, out of the inbox
    assert (code, out) == (1, "")
    assert "'3' is too short to name an approval" in err
    assert asyncio.run(pending(store_url)) == sorted(TWINS)
    # One more character tells them apart.
    code, out, err = signoff("approve", "1deadbeef", *database)
    assert (code, out, err) == (0, f"{TWINS[1]}: approved by olga (delete_pod)\n", "")


async def judged(url: str, *names: str) -> list[tuple[str, str | None]]:
    """Each pod's delete_pod as carol asks for it in thread t1: run or held (its approval)."""
    async with open_store(url) as store:
        gate = Gate(
            Policy.from_dict({"rules": [{"ask": "delete_pod", "approvers": ["ops"]}]}), store
        )
        calls = [ToolCall(id=n, name="delete_pod", args={"name": n}) for n in names]
        context = CheckContext(thread_id="t1", requested_by="carol")
        outcomes = await gate.check(calls, context)
        return [(o.kind, None if o.approval is None else o.approval.id) for o in outcomes]


def test_approve_always_covers_the_same_arguments_unless_any_args_and_says_what_it_let_through(
    store_url: str,
):
    decider = ("--database", store_url, "--as", "olga", "--role", "ops")
    [(_, nginx)] = asyncio.run(judged(store_url, "nginx-123"))
    assert nginx is not None
    code, out, err = signoff("approve", nginx, "--always", "thread", *decider)
    assert (code, err) == (0, "")
    assert out == (
        f"{nginx}: approved by olga (delete_pod)\n"
        'grant: from now on delete_pod with exactly the arguments {"name": "nginx-123"} runs '
        "without asking in thread t1, when carol requests it — while the rule that asked stays "
        f"as it is and the approver keeps a role it needs ({typed_here()} grants list)\n"
    )
    [(prod_kind, prod), (again, _)] = asyncio.run(judged(store_url, "prod-db-0", "nginx-123"))
    assert (prod_kind, again) == ("hold", "run")
    assert prod is not None
    code, out, _ = signoff("approve", prod, "--always", "thread", "--any-args", *decider)
    assert code == 0 and "delete_pod with any arguments runs without asking in thread t1" in out
    assert asyncio.run(judged(store_url, "redis-7")) == [("run", None)]
    code, _, err = signoff("approve", prod, "--any-args", *decider)
    assert code == 2 and "give --always too" in err


def test_the_rule_s_roles_hold_on_the_command_line_too(store_url: str):
    [approval] = asyncio.run(held(store_url, 1))
    code, _, err = signoff("approve", approval, "--database", store_url, "--as", "bob")
    assert code == 1
    assert "needs one of the roles ['ops']" in err


def test_approve_needs_somewhere_to_decide(tmp_path: Path):
    env = {
        k: v for k, v in os.environ.items() if k not in ("SIGNOFF_SERVER", "SIGNOFF_DATABASE_URL")
    }
    env["XDG_DATA_HOME"] = str(tmp_path)  # no demo serves from there
    result = subprocess.run(
        [*signoff_command(), "approve", "x"], capture_output=True, text=True, env=env,
        check=False,
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "signoff approve: no server given and no demo running here: pass --server URL "
        f"(with --token) or --database URL, or start one with `{typed_here()} demo`\n"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["approve", "a1", "--as", "olga"],
        ["reject", "a1", "no", "--as", "olga", "--role", "ops"],
        ["assign", "a1", "fay", "--as", "olga"],
        ["inbox", "--as", "olga"],
        ["grants", "revoke", "g1", "--as", "olga"],
    ],
    ids=lambda command: command[0] if command[0] != "grants" else "grants revoke",
)
def test_as_through_a_server_is_refused_saying_the_token_decides_and_nothing_is_sent(
    command: list[str],
):
    with answering(200, b'{"items": []}') as (url, sent):
        code, out, err = signoff(*command, "--server", url)
    assert (code, out, sent) == (2, "", [])
    name = " ".join(command[:2] if command[0] == "grants" else command[:1])
    assert err == (
        f"signoff {name}: --as olga cannot apply through a server ({url}): it decides who you "
        "are from your token (one without authentication, as the demo, takes everyone for "
        "'local'). To act as olga, give olga's token (--token T, or SIGNOFF_TOKEN); --as and "
        "--role are for working straight on a database (--database URL)"
    )


def test_a_role_through_a_server_is_refused_too_and_so_is_a_database_a_server_overrides(
    tmp_path: Path,
):
    with answering(200, b'{"items": []}') as (url, sent):
        code, _, err = signoff("approve", "a1", "--role", "finance", "--server", url)
        assert (code, sent) == (2, [])
        assert "--role finance cannot apply through a server" in err
        assert "To act with other roles, give a token that has them (--token T" in err
        # A server in the environment comes before a database typed: say so.
        database = f"sqlite:///{tmp_path / 'signoff.db'}"
        result = subprocess.run(
            [*signoff_command(), "approve", "a1", "--database", database, "--as", "olga"],
            capture_output=True, text=True, env=os.environ | {"SIGNOFF_SERVER": url},
            check=False,
        )  # fmt: skip
    assert (result.returncode, sent) == (2, [])
    assert result.stderr.endswith(
        "--as and --role are for working straight on a database (--database URL), given no "
        "server: one is given too (--server or SIGNOFF_SERVER), and it wins\n"
    )


@contextmanager
def answering(
    status: int, body: bytes, headers: dict[str, str] | None = None
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A server on loopback that answers every request alike: its URL, and what it was sent."""
    sent: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            sent.append(
                {
                    "request": f"{self.command} {self.path}",
                    "authorization": self.headers.get("Authorization"),
                    "type": self.headers.get("Content-Type"),
                    "body": self.rfile.read(length),
                }
            )
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_DELETE = do_GET

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", sent
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def test_a_command_sends_the_server_its_token_its_query_and_its_decision_as_json():
    with answering(200, b'{"items": []}') as (url, sent):
        params = {"tool": "rm", "revoked": True, "cursor": None}
        assert on_server(url + "/", "t0ken", "GET", "/v1/grants", params=params) == {"items": []}
        through_server(url, None, "a1", Reject(reason="p1 serves traffic"))
    assert sent == [
        {
            "request": "GET /v1/grants?tool=rm&revoked=true",
            "authorization": "Bearer t0ken",
            "type": None,
            "body": b"",
        },
        {
            "request": "POST /v1/approvals/a1/decision",
            "authorization": None,
            "type": "application/json",
            "body": b'{"kind": "reject", "reason": "p1 serves traffic"}',
        },
    ]


def test_a_redirect_is_refused_so_the_token_goes_nowhere_else():
    with (
        answering(200, b"{}") as (elsewhere, reached),
        answering(307, b"", {"Location": f"{elsewhere}/v1/grants"}) as (url, _),
        pytest.raises(SignoffError, match=f"^{url} said 307: $"),
    ):
        on_server(url, "t0ken", "GET", "/v1/grants")
    assert reached == []


def test_what_a_server_says_instead_of_an_answer_is_one_line_naming_it():
    with (
        answering(404, b'{"detail": "no approval a1"}') as (url, _),
        pytest.raises(NotFoundError, match=f"^{url} said 404: no approval a1$"),
    ):
        on_server(url, None, "GET", "/v1/approvals/a1")
    with (
        answering(502, b"<html>Bad Gateway</html>") as (url, _),
        pytest.raises(SignoffError, match=f"^{url} said 502: <html>Bad Gateway</html>$"),
    ):
        on_server(url, None, "GET", "/v1/approvals")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(SignoffError, match=f"^cannot reach {closed}: .*Connection refused"):
        on_server(closed, None, "GET", "/v1/approvals")
    with pytest.raises(SignoffError, match="'localhost:8000' is not a server's URL"):
        on_server("localhost:8000", None, "GET", "/v1/approvals")


async def edited_by_olga(url: str) -> str:
    """A `pay` call that needs two people's approval, which olga edited (her approval)."""
    policy = Policy.from_dict({"rules": [{"ask": "pay", "approvals": {"count": 2}}]})
    async with open_store(url) as store:
        gate = Gate(policy, store)
        [held] = await gate.check([ToolCall(id="p", name="pay", args={"amount": 100})])
        assert held.approval is not None
        edit = Edit(args={"amount": 999999})
        await gate.decide(held.approval.id, edit, actor="olga", version=1)
    return held.approval.id


def test_a_decision_names_the_version_looked_at_and_a_stale_one_says_what_changed(store_url: str):
    approval_id = asyncio.run(edited_by_olga(store_url))
    bob = ("--database", store_url, "--as", "bob")
    look = f"See it as it is now with `{typed_here()} inbox` (show N), then decide with --version 2"
    code, out, err = signoff("approve", approval_id, "--version", "1", *bob)
    assert (code, out) == (1, "")
    assert err.startswith(f"error: approval '{approval_id}' changed since version 1, "), err
    assert "edited by olga at " in err and "amount 100 → 999999" in err and err.endswith(look)
    # Naming no version, an approval of the edited call is refused too: say what you saw.
    code, _, err = signoff("approve", approval_id, *bob)
    assert code == 1 and "must say which version it was made on (now 2)" in err
    assert err.endswith(look)
    code, _, err = signoff("reject", approval_id, "too much", "--version", "0", *bob)
    assert code == 2 and "--version" in err  # versions start at 1
    assert asyncio.run(votes(store_url, approval_id)) == ("pending", ["olga"])

    code, out, err = signoff("approve", approval_id[-8:], "--version", "2", *bob)
    assert (code, out, err) == (0, f"{approval_id}: edited by bob (pay)\n", "")
    assert asyncio.run(votes(store_url, approval_id)) == ("edited", ["olga", "bob"])


async def votes(url: str, approval_id: str) -> tuple[str, list[str]]:
    async with open_store(url) as store:
        approval = await store.get_approval(approval_id)
    return approval.status, [v.by for v in approval.votes]


async def test_through_a_server_a_decision_carries_its_version(tmp_path: Path):
    database = f"sqlite:///{tmp_path / 'signoff.db'}"
    approval_id = await edited_by_olga(database)
    config = tmp_path / "signoff.yaml"
    config.write_text(
        f"database: {database}\n"
        "auth:\n  tokens:\n    - {principal: bob, token_env: SIGNOFF_TEST_TOKEN}\n"
        "rules:\n  - {ask: pay, approvals: {count: 2}}\n"
    )
    env = {**os.environ, "SIGNOFF_TEST_TOKEN": "b0b"}
    async with signoff_server("serve", "--config", str(config), "--port", "0", env=env) as (
        url,
        _,
    ):
        bob = ("--server", url, "--token", "b0b")
        code, _, err = await asyncio.to_thread(
            signoff, "reject", approval_id, "no", "--version", "1", *bob
        )
        assert code == 1
        assert f"said 409: approval '{approval_id}' changed since version 1" in err
        assert err.endswith("then decide with --version 2")
        code, out, _ = await asyncio.to_thread(
            signoff, "reject", approval_id, "no", "--version", "2", *bob
        )
        assert (code, out) == (0, f"{approval_id}: rejected by bob (pay)\n")


def test_a_stale_answer_from_a_server_is_a_stale_decision_error():
    body = (
        b'{"error": "StaleDecisionError", "detail": "approval \'a1\' changed since version 1: '
        b'approved by olga", "approval_id": "a1", "seen": 1, "version": 2, "changes": []}'
    )
    with answering(409, body) as (url, sent), pytest.raises(StaleDecisionError) as raised:
        through_server(url, None, "a1", Approve(), version=1)
    assert (
        str(raised.value)
        == f"{url} said 409: approval 'a1' changed since version 1: approved by olga"
    )
    assert (raised.value.seen, raised.value.version) == (1, 2)
    assert sent[0]["body"] == b'{"kind": "approve", "version": 1}'


def test_on_a_database_a_decision_is_judged_by_the_policy_a_server_saved_there(store_url: str):
    [held_id] = asyncio.run(held(store_url, 1))
    frozen = {"rules": [{"deny": "delete_pod", "reason": "deletions are frozen"}]}

    async def save() -> None:
        async with open_store(store_url) as store:
            policy = Policy.from_dict(frozen)
            await store.save_policy(policy.version, frozen, actor="admin", at=await store.clock())

    asyncio.run(save())
    code, _, err = signoff(
        "approve", held_id, "--database", store_url, "--as", "olga", "--role", "ops"
    )
    assert code != 0 and "rejected by signoff" in err, err

    async def stored() -> Approval:
        async with open_store(store_url) as store:
            return await store.get_approval(held_id)

    rejected = asyncio.run(stored())
    assert (rejected.status, rejected.decided_by) == ("rejected", "signoff")
    assert isinstance(rejected.decision, Reject) and "frozen" in rejected.decision.reason


async def asked(url: str, question: dict[str, object]) -> str:
    async with open_store(url) as store:
        gate = Gate(Policy.from_dict({}), store)
        call = ToolCall(id="q1", name="ask_person", kind="question", args=question)
        [outcome] = await gate.check([call])
    assert outcome.approval is not None
    return outcome.approval.id


def test_answer_answers_a_question_by_its_choice_or_as_json_and_refuses_a_misfit(
    store_url: str,
):
    region = asyncio.run(asked(store_url, {"question": "Region?", "choices": ["eu", "us"]}))
    code, _, err = signoff("answer", region, "mars", "--database", store_url, "--as", "olga")
    assert (code, err) == (1, "error: answer: not one of ['eu', 'us']")
    code, out, err = signoff("answer", region, "eu", "--database", store_url, "--as", "olga")
    assert (code, out, err) == (0, f"{region}: answered by olga (ask_person)\n", "")
    code, _, err = signoff("answer", region, "us", "--database", store_url, "--as", "pia")
    assert code == 1
    assert "already answered by olga" in err

    several = asyncio.run(
        asked(store_url, {"question": "Which?", "choices": ["a", "b", "c"], "multiple": True})
    )
    code, out, _ = signoff(
        "answer", several, "--json", '["a", "c"]', "--database", store_url, "--as", "olga"
    )
    assert (code, out) == (0, f"{several}: answered by olga (ask_person)\n")
    answered = asyncio.run(approval_of(store_url, several))
    assert answered.decision == Answer(value=["a", "c"])


async def approval_of(url: str, approval_id: str) -> Approval:
    async with open_store(url) as store:
        return await store.get_approval(approval_id)
