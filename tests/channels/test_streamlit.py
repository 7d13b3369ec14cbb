"""`signoff.channels.streamlit` in a Streamlit app (driven by `AppTest`), deciding over a real
`signoff serve` with a token — each decision's effect read back through the REST API — and on
a local store through the Python API."""

from __future__ import annotations

import asyncio
import getpass
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from streamlit.testing.v1 import AppTest

from signoff import Approve, Policy, ToolCall
from signoff.gate import Gate
from signoff.store import open_store
from tests.deadline import HANG
from tests.processes import signoff_server

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """\
database: sqlite:///{database}
auth:
  tokens:
    - principal: olga
      roles: [ops]
      token_env: SIGNOFF_TEST_TOKEN
    - principal: bob
      token_env: SIGNOFF_TEST_TOKEN_BOB
rules:
  - ask: delete_pod
    reason: deleting a pod stops what it serves
  - ask: pay
    approvals: {{count: 2}}
"""
TOKEN = "t0ken"
BOB = "b0b-token"
FOUR_EYES = Policy.from_dict({"rules": [{"ask": "pay", "approvals": {"count": 2}}]})


class Signoff:
    """A real `signoff serve` (the ops agent of tests/server/serve_agents.py, whose delete_pod
    writes each pod it really deleted to `side`), and a client with the token."""

    def __init__(self, url: str, client: httpx.AsyncClient, side: Path, database: str) -> None:
        self.url, self.client, self.side, self.database = url, client, side, database

    async def held(self, thread: str, pod: str, asked: str = "please delete") -> tuple[str, str]:
        """Start a run that asks to delete `pod`; its id and its one approval's id."""
        run = await self.start(thread, pod, asked)
        run = await self.settled(run["id"])
        assert run["status"] == "paused", run
        [approval] = run["pending_approvals"]
        return run["id"], approval

    async def start(self, thread: str, pod: str, asked: str = "please delete") -> dict[str, Any]:
        started = await self.client.post(
            f"/v1/threads/{thread}/runs", json={"agent": "ops", "input": f"{asked} {pod}"}
        )
        assert started.status_code == 201, started.text
        run: dict[str, Any] = started.json()
        return run

    async def approval(self, approval_id: str) -> dict[str, Any]:
        answer: dict[str, Any] = (await self.client.get(f"/v1/approvals/{approval_id}")).json()
        return answer

    async def settled(self, run_id: str) -> dict[str, Any]:
        """The run, once it has paused or ended (its last message says what its call came to)."""
        async with asyncio.timeout(HANG):
            while True:
                run: dict[str, Any] = (await self.client.get(f"/v1/runs/{run_id}")).json()
                if run["status"] in ("paused", "completed", "failed"):
                    return run
                await asyncio.sleep(0.05)

    async def finished(self, run_id: str) -> dict[str, Any]:
        async with asyncio.timeout(HANG):
            while True:
                run = await self.settled(run_id)
                if run["status"] != "paused":  # until the decision's resume has picked it up
                    assert run["status"] == "completed", run
                    return run
                await asyncio.sleep(0.05)

    def deleted(self) -> list[str]:
        """The pods the agent's tool really deleted, in order."""
        lines = self.side.read_text().splitlines() if self.side.exists() else []
        return [line.split()[1] for line in lines]


@pytest.fixture
async def signoff(tmp_path: Path) -> AsyncIterator[Signoff]:
    config = tmp_path / "signoff.yaml"
    config.write_text(CONFIG.format(database=tmp_path / "signoff.db"))
    side = tmp_path / "side.txt"
    env = os.environ | {
        "SIGNOFF_TEST_TOKEN": TOKEN,
        "SIGNOFF_TEST_TOKEN_BOB": BOB,
        "SIGNOFF_TEST_SIDE_FILE": str(side),
        "PYTHONPATH": str(ROOT),
    }
    async with (
        signoff_server(
            "serve", "--config", str(config), "--agents", "tests.server.serve_agents:agents",
            "--port", "0", env=env,
        ) as (url, _),
        httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=HANG
        ) as client,
    ):  # fmt: skip
        yield Signoff(url, client, side, f"sqlite:///{tmp_path / 'signoff.db'}")


def inbox(source: Any, **options: Any) -> AppTest:
    """An app that shows `approvals(source, **options)` and nothing else."""

    def app(source, options):  # the script's own source: it imports what it uses
        from signoff.channels.streamlit import approvals

        approvals(source, **options)

    return AppTest.from_function(app, args=(source, options), default_timeout=HANG)


async def run(app: Any) -> AppTest:
    """Run the app (or click what was set: `app` is then the widget) to its end."""
    ran: AppTest = await asyncio.to_thread(app.run, timeout=HANG)
    assert not ran.exception, [e.value for e in ran.exception]
    return ran


def plain(markdown: str) -> str:
    """Markdown as a reader sees it: the escapes of the agent's words taken out."""
    return re.sub(r"\\(.)", r"\1", markdown)


def shown(app: AppTest) -> list[str]:
    """Every text of the page, as read."""
    texts = [*app.markdown, *app.caption, *app.code, *app.success, *app.error, *app.info]
    return [plain(str(t.value)) for t in texts]


async def test_a_call_approved_in_the_app_runs_once_decided_by_the_token_s_principal(
    signoff: Signoff,
):
    run_id, held = await signoff.held(
        "t1", "web1", asked="see [the runbook](http://x.test) and delete"
    )
    app = await run(inbox(signoff.url, token=TOKEN))
    texts = shown(app)
    assert "**delete_pod**" in texts
    assert "**Why it asks:** deleting a pod stops what it serves" in texts
    assert "**The run was asked:** see [the runbook](http://x.test) and delete web1" in texts
    assert not any("](" in str(m.value) for m in app.markdown)  # words, never a link
    assert '{\n  "name": "web1"\n}' in texts
    assert any(t.startswith("agent ops · started by olga · rule rules[0] · asked ") for t in texts)
    assert app.caption[0].value == "1 call waits"

    # Approve is not the theme's primary (red) button; Reject is the red one, in any theme.
    approve, reject = (app.button(key=f"signoff:{held}:{name}") for name in ("approve", "reject"))
    assert (approve.proto.type, approve.proto.icon) == ("secondary", ":material/check:")
    assert (reject.proto.type, reject.proto.label) == ("secondary", ":red[Reject]")
    app = await run(approve.click())
    assert [s.value for s in app.success] == ["Approved delete_pod, as olga."]
    assert [i.value for i in app.info] == ["No call waits for a decision."]
    approval = await signoff.approval(held)
    assert (approval["status"], approval["decided_by"]) == ("approved", "olga")
    await signoff.finished(run_id)
    assert signoff.deleted() == ["web1"]


async def test_an_edit_the_schema_refuses_shows_as_an_error_and_a_valid_one_runs(
    signoff: Signoff,
):
    run_id, held = await signoff.held("t2", "web2")
    app = await run(inbox(signoff.url, token=TOKEN))
    app.text_area(key=f"signoff:{held}:args").input('{"name": 42}')
    app = await run(app.button(key=f"signoff:{held}:edit").click())
    [error] = app.error
    assert error.value.startswith("Not decided: the signoff server said 422: /name: "), error.value
    assert "schema: properties/name/type" in error.value
    assert (await signoff.approval(held))["status"] == "pending"

    app.text_area(key=f"signoff:{held}:args").input('{"name": "web2 ')
    app = await run(app.button(key=f"signoff:{held}:edit").click())
    [error] = app.error
    assert error.value.startswith("Not decided: the arguments are not JSON: "), error.value

    app.text_area(key=f"signoff:{held}:args").input('{"name": "web2-canary"}')
    app = await run(app.button(key=f"signoff:{held}:edit").click())
    assert not app.error
    assert [s.value for s in app.success] == ["Edited and approved delete_pod, as olga."]
    approval = await signoff.approval(held)
    assert (approval["status"], approval["args"], approval["requested_args"]) == (
        "edited", {"name": "web2-canary"}, {"name": "web2"},
    )  # fmt: skip
    await signoff.finished(run_id)
    assert signoff.deleted() == ["web2-canary"]


async def test_a_response_in_the_app_becomes_the_tool_s_result_and_nothing_runs(
    signoff: Signoff,
):
    run_id, held = await signoff.held("t3", "web3")
    app = await run(inbox(signoff.url, token=TOKEN))
    app.text_area(key=f"signoff:{held}:content").input("web3 was deleted yesterday")
    app = await run(app.button(key=f"signoff:{held}:respond").click())
    assert [s.value for s in app.success] == ["Answered delete_pod, as olga."]
    approval = await signoff.approval(held)
    assert approval["decision"] == {"kind": "respond", "content": "web3 was deleted yesterday"}
    run_record = await signoff.finished(run_id)
    assert run_record["messages"][-1]["content"] == "done: web3 was deleted yesterday"
    assert signoff.deleted() == []


async def test_a_rejection_in_the_app_keeps_its_reason_and_nothing_runs(signoff: Signoff):
    run_id, held = await signoff.held("t4", "web4")
    app = await run(inbox(signoff.url, token=TOKEN))
    app.text_input(key=f"signoff:{held}:reason").input("web4 serves the checkout")
    app = await run(app.button(key=f"signoff:{held}:reject").click())
    assert [s.value for s in app.success] == ["Rejected delete_pod, as olga."]
    approval = await signoff.approval(held)
    assert (approval["status"], approval["decision"]) == (
        "rejected", {"kind": "reject", "reason": "web4 serves the checkout"},
    )  # fmt: skip
    run_record = await signoff.finished(run_id)
    assert "web4 serves the checkout" in run_record["messages"][-1]["content"]
    assert signoff.deleted() == []


async def test_a_call_decided_elsewhere_first_says_why_the_app_s_decision_was_not_taken(
    signoff: Signoff,
):
    _, held = await signoff.held("t9", "web9")
    app = await run(inbox(signoff.url, token=TOKEN))
    rejected = await signoff.client.post(
        f"/v1/approvals/{held}/decision", json={"kind": "reject", "reason": "not today"}
    )
    assert rejected.status_code == 200
    app = await run(app.button(key=f"signoff:{held}:approve").click())
    [error] = app.error
    assert error.value.startswith(
        f"delete_pod was not decided: the signoff server said 409: approval '{held}' is already "
        "rejected by 'olga'"
    ), error.value
    assert not app.success
    assert (await signoff.approval(held))["status"] == "rejected"


async def test_approve_always_for_the_thread_lets_its_next_identical_call_through(
    signoff: Signoff,
):
    first_run, held = await signoff.held("t5", "web5")
    app = await run(inbox(signoff.url, token=TOKEN))
    scopes = app.radio(key=f"signoff:{held}:scope")
    assert scopes.options == [
        "this run only (its later turns), when its requester makes them",
        "this conversation (thread), when its requester makes them",
        "any run or thread, whoever makes them",
        "everywhere, whoever makes them",
    ]
    # A conversation's next message is a new run: the thread is where a grant fires again.
    assert scopes.value == "thread"
    assert app.checkbox(key=f"signoff:{held}:any_args").value is False  # these arguments only
    app = await run(app.button(key=f"signoff:{held}:always").click())
    assert [s.value for s in app.success] == [
        "Approved delete_pod, and from now on its calls with these arguments in this "
        "conversation (thread), when its requester makes them, as olga."
    ]
    await signoff.finished(first_run)
    [grant] = (await signoff.client.get("/v1/grants", params={"tool": "delete_pod"})).json()[
        "items"
    ]
    assert (grant["scope"], grant["with_args"], grant["granted_by"], grant["approval_id"]) == (
        "thread", True, "olga", held,
    )  # fmt: skip
    # The same call again in that thread runs without asking; in another thread, it asks.
    again = await signoff.start("t5", "web5")
    assert (await signoff.settled(again["id"]))["status"] == "completed"
    assert signoff.deleted() == ["web5", "web5"]
    await signoff.held("t6", "web5")


async def test_approve_always_for_any_arguments_needs_the_tick_that_says_so(signoff: Signoff):
    _, held = await signoff.held("t8", "web8")
    app = await run(inbox(signoff.url, token=TOKEN))
    app.radio(key=f"signoff:{held}:scope").set_value("agent")
    app.checkbox(key=f"signoff:{held}:any_args").check()
    app = await run(app.button(key=f"signoff:{held}:always").click())
    assert [s.value for s in app.success] == [
        "Approved delete_pod, and from now on its calls with any arguments in any run or "
        "thread, whoever makes them, as olga."
    ]
    [grant] = (await signoff.client.get("/v1/grants", params={"tool": "delete_pod"})).json()[
        "items"
    ]
    assert (grant["scope"], grant["with_args"], grant["approval_id"]) == ("agent", False, held)


async def test_a_wrong_token_shows_a_clear_error_and_no_list(signoff: Signoff):
    await signoff.held("t7", "web7")
    app = await run(inbox(signoff.url, token="not-the-token"))
    [error] = app.error
    assert error.value.startswith(
        f"The pending approvals cannot be read: the signoff server at {signoff.url} refused "
        "the token (401: "
    ), error.value
    assert error.value.endswith("give the token of a principal in its config")
    assert not app.button


async def test_a_server_that_cannot_be_reached_is_said_so(unused_tcp_port: int):
    app = await run(inbox(f"http://127.0.0.1:{unused_tcp_port}", token=TOKEN))
    [error] = app.error
    assert error.value.startswith(
        "The pending approvals cannot be read: cannot reach the signoff server at "
        f"http://127.0.0.1:{unused_tcp_port}: "
    ), error.value


async def test_on_a_local_store_the_app_decides_as_its_named_actor(tmp_path: Path):
    from signoff.channels.streamlit import LocalStore

    url = f"sqlite:///{tmp_path / 'local.db'}"
    policy = Policy.from_dict({"rules": [{"ask": "delete_pod", "approvers": ["ops"]}]})
    async with open_store(url) as store:
        outcomes = await Gate(policy, store).check(
            [ToolCall(id=f"c{n}", name="delete_pod", args={"name": f"p{n}"}) for n in (1, 2)]
        )
    second, first = (o.approval.id for o in outcomes if o.approval is not None)
    schemas = {"delete_pod": {"type": "object", "properties": {"name": {"type": "string"}}}}

    local = LocalStore(url, actor="olga", roles=["ops"], policy=policy, schemas=schemas)
    app = await run(inbox(local))
    assert app.caption[0].value == "2 calls wait"
    app = await run(app.button(key=f"signoff:{first}:approve").click())
    assert [s.value for s in app.success] == ["Approved delete_pod, as olga."]
    app.text_area(key=f"signoff:{second}:args").input('{"name": 2}')
    app = await run(app.button(key=f"signoff:{second}:edit").click())
    [error] = app.error
    assert (
        error.value
        == "Not decided: /name: 2 is not of type 'string' (schema: properties/name/type)"
    )

    outsider = await run(inbox(LocalStore(url, actor="bob")))
    outsider = await run(outsider.button(key=f"signoff:{second}:approve").click())
    [error] = outsider.error
    assert "needs one of the roles ['ops']" in error.value
    async with open_store(url) as store:
        decided = await store.get_approval(first)
        waiting = await store.get_approval(second)
    assert (decided.status, decided.decided_by, waiting.status) == ("approved", "olga", "pending")


def example(name: str) -> str:
    """The Python block of docs/streamlit.md marked ``<!-- example: NAME -->``."""
    text = (ROOT / "docs" / "streamlit.md").read_text(encoding="utf-8")
    [body] = re.findall(rf"<!-- example: {name} -->\n```python\n(.*?)```", text, re.S)
    return str(body)


async def test_the_docs_example_app_decides_over_the_server_its_environment_names(
    signoff: Signoff, monkeypatch: pytest.MonkeyPatch
):
    run_id, held = await signoff.held("t8", "web8")
    monkeypatch.setenv("SIGNOFF_SERVER", signoff.url)
    monkeypatch.setenv("SIGNOFF_TOKEN", TOKEN)
    app = await run(AppTest.from_string(example("streamlit-app"), default_timeout=HANG))
    assert [t.value for t in app.title] == ["Calls waiting for you"]
    app = await run(app.button(key=f"signoff:{held}:approve").click())
    assert [s.value for s in app.success] == ["Approved delete_pod, as olga."]
    await signoff.finished(run_id)
    assert signoff.deleted() == ["web8"]


async def test_the_docs_local_example_decides_as_the_user_running_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    url = f"sqlite:///{tmp_path / 'local.db'}"
    policy = Policy.from_dict({"rules": [{"ask": "delete_pod", "approvers": ["ops"]}]})
    async with open_store(url) as store:
        [outcome] = await Gate(policy, store).check([ToolCall(id="c", name="delete_pod")])
    assert outcome.approval is not None
    monkeypatch.setenv("SIGNOFF_DATABASE_URL", url)
    app = await run(AppTest.from_string(example("streamlit-local"), default_timeout=HANG))
    app = await run(app.button(key=f"signoff:{outcome.approval.id}:approve").click())
    assert [s.value for s in app.success] == [f"Approved delete_pod, as {getpass.getuser()}."]
    async with open_store(url) as store:
        assert (await store.get_approval(outcome.approval.id)).decided_by == getpass.getuser()


def test_without_streamlit_the_module_says_which_extra_to_install():
    blocked = "import sys; sys.modules['streamlit'] = None; import signoff.channels.streamlit"
    result = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, check=False
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "signoff.errors.MissingExtraError: signoff.channels.streamlit needs the 'streamlit' "
        "extra: pip install 'signoff[streamlit]'"
    )


async def paid(url: str, **args: Any) -> str:
    """Hold a `pay` call that needs two people's approval, in the database at `url`."""
    async with open_store(url) as store:
        [outcome] = await Gate(FOUR_EYES, store).check([ToolCall(id="p", name="pay", args=args)])
    assert outcome.approval is not None
    return outcome.approval.id


async def test_a_decision_on_a_card_older_than_an_edit_is_refused_and_the_card_shows_the_edit(
    signoff: Signoff,
):
    held = await paid(signoff.database, amount=100, to="bob")
    app = await run(inbox(signoff.url, token=BOB))
    assert any(t.endswith(" · version 1") for t in shown(app))
    # olga edits the call while bob's page shows it as it was: her edit is her approval.
    edit = {"kind": "edit", "args": {"amount": 999999, "to": "mallory"}, "version": 1}
    edited = await signoff.client.post(f"/v1/approvals/{held}/decision", json=edit)
    assert edited.status_code == 200, edited.text

    app = await run(app.button(key=f"signoff:{held}:approve").click())
    assert not app.success
    [error] = app.error
    assert error.value.startswith(f"Not decided: approval '{held}' changed since version 1"), (
        error.value
    )
    assert "edited by olga" in error.value and "amount 100 → 999999" in error.value
    # The card shows the call as it is now, both argument sets, and whose approval it has.
    texts = shown(app)
    assert "**Edited by olga:** these arguments run" in texts
    assert "**As requested:**" in texts
    assert [c.value for c in app.code] == [  # what runs first, then what was asked
        '{\n  "amount": 999999,\n  "to": "mallory"\n}',
        '{\n  "amount": 100,\n  "to": "bob"\n}',
    ]
    assert "**Approvals so far:** olga (1 of 2)" in texts
    assert any(t.endswith(" · version 2") for t in texts)
    assert app.text_area(key=f"signoff:{held}:args").value == (
        '{\n  "amount": 999999,\n  "to": "mallory"\n}'
    )
    approval = await signoff.approval(held)
    assert (approval["status"], approval["version"], [v["by"] for v in approval["votes"]]) == (
        "pending", 2, ["olga"],
    )  # fmt: skip

    # Seen as it is, bob's approval completes the two.
    app = await run(app.button(key=f"signoff:{held}:approve").click())
    assert [s.value for s in app.success] == ["Edited and approved pay, as bob."]
    approval = await signoff.approval(held)
    assert (approval["status"], approval["args"]) == ("edited", {"amount": 999999, "to": "mallory"})


async def test_on_a_local_store_a_decision_is_made_on_the_version_its_card_showed(tmp_path: Path):
    from signoff.channels.streamlit import LocalStore

    url = f"sqlite:///{tmp_path / 'local.db'}"
    held = await paid(url, amount=5)
    app = await run(inbox(LocalStore(url, actor="carla", policy=FOUR_EYES)))
    async with open_store(url) as store:  # olga approves first, elsewhere
        await Gate(FOUR_EYES, store).decide(held, Approve(), actor="olga", version=1)
    app = await run(app.button(key=f"signoff:{held}:reject").click())
    [error] = app.error
    assert "changed since version 1" in error.value and "approved by olga" in error.value
    assert "**Approvals so far:** olga (1 of 2)" in shown(app)
    app = await run(app.button(key=f"signoff:{held}:approve").click())
    assert [s.value for s in app.success] == ["Approved pay, as carla."]
