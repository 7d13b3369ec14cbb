"""``notify:`` in the config file: read with `signoff serve`'s config, every mistake named with
its line and column; and a real `signoff serve` telling a webhook of a request and its decision."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx
import pytest

from signoff.errors import PolicyError
from signoff.notify import verify_signature
from signoff.server.config import load_config
from tests.deadline import HANG
from tests.notify.receivers import Receiver, http_receiver
from tests.processes import signoff_server

ROOT = Path(__file__).resolve().parents[2]


def test_a_notify_section_is_read_with_its_secrets_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HOOK_SECRET", "s3cret")
    monkeypatch.setenv("SLACK_HOOK", "https://hooks.slack.com/services/T/B/X")
    path = tmp_path / "signoff.yaml"
    path.write_text(
        "default: ask\n"
        "notify:\n"
        "  base_url: https://signoff.example/\n"
        "  retry: {attempts: 3, backoff: 5s, max_backoff: 1m}\n"
        "  webhooks:\n"
        "    - {url: 'https://hooks.example/x', secret_env: HOOK_SECRET, events: [requested],\n"
        "       tools: ['*_delete*']}\n"
        "  slack: {url_env: SLACK_HOOK, users: {U1: olga}}\n"
        "  email:\n"
        "    - {host: smtp.example, sender: s@example.com, to: [a@example.com]}\n"
    )
    notify = load_config(path).notify
    assert notify.base_url == "https://signoff.example"
    assert (notify.retry.attempts, notify.retry.backoff, notify.retry.max_backoff) == (3, 5, 60)
    assert notify.retry.delay(1) == 5 and notify.retry.delay(5) == 60
    [hook] = notify.webhooks
    assert (hook.secret, hook.filters.events, hook.filters.tools) == (
        "s3cret", frozenset({"requested"}), ("*_delete*",),
    )  # fmt: skip
    [slack] = notify.slack
    assert (slack.url, slack.users["U1"].principal, slack.filters.name) == (
        "https://hooks.slack.com/services/T/B/X", "olga", "slack[0]",
    )  # fmt: skip
    [mail] = notify.email
    assert (mail.port, mail.starttls, mail.to) == (587, True, ("a@example.com",))


def test_every_mistake_in_notify_is_named_with_its_line_and_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("SIGNOFF_UNSET_SECRET", raising=False)
    path = tmp_path / "bad.yaml"
    path.write_text(
        "notify:\n"
        "  webhooks:\n"
        "    - url: ftp://hooks.example\n"
        "      secret_env: SIGNOFF_UNSET_SECRET\n"
        "      events: [requested, approved]\n"
        "  slack:\n"
        "    - channel: '#ops'\n"
        "  email:\n"
        "    - {host: smtp.example, port: 70000, sender: s@example.com, to: [], usrname: x}\n"
        "  retry: {attempts: 0}\n"
    )
    with pytest.raises(PolicyError) as caught:
        load_config(path)
    text = str(caught.value)
    for expected in (
        f"{path}:3:12: notify.webhooks[0].url: url must be an http(s) URL",
        f"{path}:4:19: notify.webhooks[0].secret_env: the environment variable "
        "SIGNOFF_UNSET_SECRET is not set",
        f"{path}:5:15: notify.webhooks[0].events: unknown event 'approved'",
        "notify.slack[0]: give either 'url_env' (an incoming webhook) or 'token_env'",
        "notify.email[0].port: port must be 1 to 65535",
        "unknown key 'usrname'",
        "notify.retry.attempts: attempts must be at least 1",
    ):
        assert expected in text


async def test_signoff_serve_tells_a_webhook_of_a_request_and_its_decision(tmp_path: Path):
    receiver = Receiver()
    with http_receiver(receiver) as hook:
        config = tmp_path / "signoff.yaml"
        config.write_text(
            f"database: sqlite:///{tmp_path / 'signoff.db'}\n"
            "auth: {tokens: [{principal: olga, roles: [ops], token: t0ken}]}\n"
            "rules: [{ask: delete_pod}]\n"
            f"notify: {{webhooks: [{{url: '{hook}/signoff', secret_env: HOOK_SECRET}}]}}\n"
        )
        env = {
            "HOOK_SECRET": "s3cret",
            "SIGNOFF_TEST_SIDE_FILE": str(tmp_path / "side.txt"),
            "PYTHONPATH": str(ROOT),
            "PATH": str(Path(sys.executable).parent),
        }
        async with (
            signoff_server(
                "serve", "--config", str(config), "--agents", "tests.server.serve_agents:agents",
                "--port", "0", env=env,
            ) as (url, _),
            httpx.AsyncClient(base_url=url, headers={"Authorization": "Bearer t0ken"}) as client,
        ):  # fmt: skip
            started = await client.post(
                "/v1/threads/t/runs", params={"wait": 10},
                json={"agent": "ops", "input": "delete web-1"},
            )  # fmt: skip
            [held] = started.json()["pending_approvals"]  # ids
            [requested] = await asyncio.to_thread(receiver.wait_for, 1, HANG)
            decided = await client.post(f"/v1/approvals/{held}/decision", json={"kind": "approve"})
            assert decided.status_code == 200, decided.text
            told = await asyncio.to_thread(receiver.wait_for, 2, HANG)
    verify_signature("s3cret", requested.body, requested.headers["signoff-signature"])
    body = requested.json()
    assert body["event"] == "approval.requested"
    assert body["url"] == f"{url}/approvals/{held}"  # the server's own address
    assert body["approval"]["args"] == {"name": "web-1"}
    assert body["approval"]["input"] == "delete web-1"  # what the user asked the run
    assert [r.json()["event"] for r in told] == ["approval.requested", "approval.decided"]
    assert told[1].json()["actor"] == "olga"


def test_the_config_in_the_notifications_doc_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    text = (ROOT / "docs" / "notifications.md").read_text()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    for name in ("SIGNOFF_WEBHOOK_SECRET", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET",
                 "SMTP_USERNAME", "SMTP_PASSWORD"):  # fmt: skip
        monkeypatch.setenv(name, f"value-of-{name}")
    path = tmp_path / "signoff.yaml"
    path.write_text(block)
    notify = load_config(path).notify
    sinks = [*notify.webhooks, *notify.slack, *notify.email]
    assert [s.filters.name for s in sinks] == [  # type: ignore[attr-defined]
        "webhooks[0]", "slack[0]", "email[0]",
    ]  # fmt: skip
    assert notify.slack[0].users["U0456EFGH"].roles == frozenset({"ops"})
