"""The MCP gateway as a full MCP proxy, checked by the protocol's own conformance suite
(`@modelcontextprotocol/conformance`, pinned in tests/js, run unchanged on the Node 22 npm
brings): its server scenarios against `conformance_server.py` directly, then through
``signoff mcp-gateway --transport http --no-auth`` with ``default: allow`` — whatever passes
directly passes through the gateway. Then what the suite does not look at: reads and prompts the
policy holds, decided in the inbox; what a server asks of its client reaching the client that
made the call, audited."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPError

from signoff import Policy
from signoff.gate import Gate
from signoff.protocols.mcp.gateway import Gateway
from signoff.protocols.mcp.settings import GatewaySettings, UpstreamSpec
from signoff.protocols.mcp.upstream import Upstream
from signoff.store import open_store
from tests.deadline import HANG
from tests.processes import signoff_command, signoff_server
from tests.protocols.test_mcp_gateway import ALICE, node_22, pending

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "tests/js/node_modules/@modelcontextprotocol/conformance/dist/index.js"
SERVER = Path(__file__).with_name("conformance_server.py")
UPSTREAM = Path(__file__).with_name("mcp_upstream.py")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def suite_checks(
    suite: Path, url: str, out: Path, *selection: str
) -> dict[str, list[dict[str, Any]]]:
    """The checks of each server scenario a release of the suite (its ``dist/index.js``) runs
    against `url`, `selection` choosing the scenarios (``--suite all``, ``--requirements R``)."""
    process = await asyncio.create_subprocess_exec(
        node_22(), str(suite), "server", *selection, "--url", url, "-o", str(out),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    async with asyncio.timeout(HANG * 4):
        said, _ = await process.communicate()
    results = {}
    for checks in out.glob("*/checks.json"):
        name = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name)
        results[name] = json.loads(checks.read_text())
    assert results, said.decode()
    return results


def passed(checks: list[dict[str, Any]]) -> bool:
    """A scenario passes when none of its checks fails (a warning is no failure)."""
    return all(c["status"] != "FAILURE" for c in checks)


async def scenarios(url: str, out: Path) -> dict[str, bool]:
    """Every server scenario of the suite (``--suite all``) against `url`: passed or not."""
    found = await suite_checks(SUITE, url, out, "--suite", "all")
    return {name: passed(checks) for name, checks in found.items()}


@contextlib.asynccontextmanager
async def direct_server() -> AsyncIterator[str]:
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SERVER), "http", str(port),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with asyncio.timeout(HANG):
            while True:
                with contextlib.suppress(OSError):
                    _, writer = await asyncio.open_connection("127.0.0.1", port)
                    writer.close()
                    break
                await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        await process.wait()


def gateway_config(tmp_path: Path, **policy: Any) -> Path:
    """signoff's config in `tmp_path`: our conformance server on stdio as ``everything``, under
    `policy` (whose keys override the config's: ``servers`` names other servers)."""
    document = {
        "database": f"sqlite+aiosqlite:///{tmp_path / 'signoff.db'}",
        "auth": {"tokens": [{"principal": "alice", "roles": ["ops"], "token": "alice-token"}]},
        "servers": {"everything": {"command": sys.executable, "args": [str(SERVER), "stdio"]}},
        **policy,
    }
    path = tmp_path / "signoff.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.heavy
async def test_every_scenario_that_passes_directly_passes_through_the_gateway(
    tmp_path: Path,
) -> None:
    path = gateway_config(tmp_path, default="allow")
    serve = ["mcp-gateway", "--config", str(path), "--transport", "http", "--no-auth"]
    async with direct_server() as url, signoff_server(*serve, "--port", "0") as (front, _):
        direct, through = await asyncio.gather(
            scenarios(url, tmp_path / "direct"), scenarios(f"{front}/mcp", tmp_path / "gateway")
        )
    # The suite's scenarios, resources, prompts, completion, logging, sampling, elicitation and
    # progress among them: our server passes them all, and so does the gateway in front of it.
    assert len(direct) >= 30
    assert {"resources-subscribe", "prompts-get-with-args", "tools-call-sampling",
            "tools-call-with-progress", "logging-set-level"} <= set(direct)  # fmt: skip
    assert [name for name, ok in direct.items() if not ok] == []
    assert set(through) == set(direct)
    assert [name for name, ok in through.items() if not ok] == []


# -- reads and prompts the policy holds --------------------------------------------------------


def gateway(path: Path, **client: Any) -> Client:
    command = [*signoff_command(), "mcp-gateway", "--config", str(path)]
    return Client(StdioServerParameters(command=command[0], args=command[1:]), **client)


@contextlib.asynccontextmanager
async def inbox(path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        signoff_server("serve", "--config", str(path), "--port", "0") as (url, _),
        httpx.AsyncClient(base_url=url, headers=ALICE) as http,
    ):
        yield http


HOLDING = {
    "default": "allow",
    "rules": [
        {"ask": {"resource": "test://static-*"}},
        {"deny": {"resource": "test://static-binary"}},
        {"ask": {"prompt": "test_prompt_with_arguments"}, "when": {"arg1": {"eq": "secret"}}},
    ],
    "gateway": {"wait": "20s", "principal": "carol"},
}


async def test_a_held_read_and_a_held_prompt_are_decided_in_the_inbox(tmp_path: Path) -> None:
    path = gateway_config(tmp_path, **HOLDING)
    async with gateway(path, mode="legacy") as client, inbox(path) as http:
        listed = await client.list_resources()
        uris = {str(r.uri) for r in listed.resources}
        assert "test://static-text" in uris and "test://static-binary" not in uris  # denied

        read = asyncio.create_task(client.read_resource("test://static-text"))
        [held] = await pending(http)
        assert (held["kind"], held["tool"], held["server"]) == (
            "resource", "test://static-text", "everything",
        )  # fmt: skip
        assert held["requested_by"] == "carol" and held["origin"] == "mcp-gateway"
        answer = await http.post(f"/v1/approvals/{held['id']}/decision", json={"kind": "approve"})
        assert answer.status_code == 200, answer.text
        contents = (await read).contents
        assert [c.text for c in contents if isinstance(c, types.TextResourceContents)] == [
            "This is the content of the static text resource."
        ]

        plain = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        assert "arg1='a'" in text_of(plain)  # no rule asks: allowed at once
        got = asyncio.create_task(
            client.get_prompt("test_prompt_with_arguments", {"arg1": "secret", "arg2": "b"})
        )
        [held] = await pending(http)
        assert (held["kind"], held["args"]) == ("prompt", {"arg1": "secret", "arg2": "b"})
        edit = {"kind": "edit", "args": {"arg1": "public", "arg2": "b"}}
        answer = await http.post(f"/v1/approvals/{held['id']}/decision", json=edit)
        assert answer.status_code == 200, answer.text
        assert "arg1='public', arg2='b'" in text_of(await got)

        with pytest.raises(MCPError, match="signoff blocked this read") as blocked:
            await client.read_resource("test://static-binary")
        assert blocked.value.error.data == {"status": "blocked"}

        audit = (await http.get("/v1/audit", params={"limit": 100})).json()["items"]
        forwards = [e["data"] for e in audit if e["action"] == "forward"]
        assert {(f.get("kind"), f["tool"]) for f in forwards if f["approval"]} == {
            ("resource", "test://static-text"), ("prompt", "test_prompt_with_arguments"),
        }  # fmt: skip


async def test_a_rejected_read_is_an_error_saying_why_and_a_pending_one_says_so(
    tmp_path: Path,
) -> None:
    path = gateway_config(tmp_path, **{**HOLDING, "gateway": {"wait": "1s"}})
    async with gateway(path, mode="legacy") as client, inbox(path) as http:
        with pytest.raises(MCPError, match="waits for a person's approval") as waiting:
            await client.read_resource("test://static-text")
        data = waiting.value.error.data
        assert data["status"] == "pending_approval"
        reject = {"kind": "reject", "reason": "not today"}
        answer = await http.post(f"/v1/approvals/{data['approval_id']}/decision", json=reject)
        assert answer.status_code == 200, answer.text
        with pytest.raises(MCPError, match="rejected this read: not today") as rejected:
            await client.read_resource("test://static-text")  # the same read: that approval
        assert rejected.value.error.data == {"status": "rejected"}
        with pytest.raises(MCPError, match="waits for a person's approval"):
            await client.read_resource("test://static-text")  # answered: it asks anew
        assert len(await pending(http)) == 1


def text_of(result: types.GetPromptResult) -> str:
    return "\n".join(
        m.content.text for m in result.messages if isinstance(m.content, types.TextContent)
    )


# -- what a server asks of its client ----------------------------------------------------------


@contextlib.asynccontextmanager
async def in_process(
    tmp_path: Path,
    policy: dict[str, Any],
    server: Path = UPSTREAM,
    *,
    names: tuple[str, ...] = ("up",),
    **settings: Any,
) -> AsyncIterator[Gateway]:
    """A `Gateway` over `server` (one process per name in `names`), a client connecting to it
    in-process (`Client(front.server)`)."""
    specs = [
        UpstreamSpec(name=n, command=sys.executable, args=(str(server), "stdio")) for n in names
    ]
    async with open_store(f"sqlite+aiosqlite:///{tmp_path / 'relay.db'}") as store:
        gate = Gate(Policy.from_dict(policy), store)
        chosen = GatewaySettings(**{"principal": "carol", **settings})
        front = Gateway(gate, [Upstream(spec) for spec in specs], settings=chosen)
        async with front.running():
            yield front


def roots(*paths: str) -> Any:
    async def answer(context: Any) -> types.ListRootsResult:
        listed = [types.Root.model_validate({"uri": f"file://{p}"}) for p in paths]
        return types.ListRootsResult(roots=listed)

    return answer


async def test_each_client_is_asked_its_own_roots_and_each_relay_is_audited(
    tmp_path: Path,
) -> None:
    """Two clients at once, each with its roots: the server asks each through the client's own
    connection, never the other's."""
    async with (
        in_process(tmp_path, {"default": "allow"}) as front,
        Client(front.server, mode="legacy", list_roots_callback=roots("/a")) as first,
        Client(front.server, mode="legacy", list_roots_callback=roots("/b", "/c")) as second,
        Client(front.server, mode="legacy") as third,  # declares no roots
    ):
        answers = await asyncio.gather(
            first.call_tool("roots", {}),
            second.call_tool("roots", {}),
            third.call_tool("roots", {}),
        )
        said = [json.loads(a.content[0].text) for a in answers]  # type: ignore[union-attr]
        assert said == [["file:///a"], ["file:///b", "file:///c"], "no roots capability"]
        relays = [e for e in await front.store.audit_log() if e.action == "relay"]
        assert sorted((e.actor, e.data["method"], e.data["answered"]) for e in relays) == [
            ("carol", "roots/list", True), ("carol", "roots/list", True),
        ]  # fmt: skip


async def test_a_servers_list_changes_and_resource_updates_reach_the_client(
    tmp_path: Path,
) -> None:
    heard: list[Any] = []

    async def notified(message: Any) -> None:
        heard.append(message)

    async with (
        in_process(tmp_path, {"default": "allow"}) as front,
        Client(front.server, mode="legacy", message_handler=notified) as client,
    ):
        await client.call_tool("announce", {"uri": "memo://a"})
        async with asyncio.timeout(HANG):
            while len(heard) < 2:
                await asyncio.sleep(0.01)
    assert {type(m) for m in heard} == {
        types.ToolListChangedNotification, types.ResourceUpdatedNotification,
    }  # fmt: skip


@pytest.mark.parametrize("level", [None, "info", "warning"])
async def test_a_2026_client_hears_the_log_messages_it_opted_into_as_it_would_directly(
    tmp_path: Path, level: types.LoggingLevel | None
) -> None:
    """A 2026-07-28 client opts into log messages with ``io.modelcontextprotocol/logLevel`` in
    each request's `_meta` (no ``logging/setLevel``): through the gateway it hears what it hears
    from the server directly — at the level it asked, or above, and none when it asked none."""

    async def heard(target: Any) -> list[tuple[str, Any]]:
        said: list[tuple[str, Any]] = []

        async def logged(params: types.LoggingMessageNotificationParams) -> None:
            said.append((params.level, params.data))

        async with Client(target, mode="auto", log_level=level, logging_callback=logged) as c:
            assert c.protocol_version == "2026-07-28"
            result = await c.call_tool("test_tool_with_logging", {})
            assert not result.is_error, result
        return said

    directly = await heard(
        StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio"])
    )
    async with in_process(tmp_path, {"default": "allow"}, SERVER) as front:
        through = await heard(front.server)
    assert through == directly
    if level == "info":
        assert [data for _, data in through] == [
            "Tool execution started", "Tool processing data", "Tool execution completed",
        ]  # fmt: skip
    else:
        assert through == []


async def test_resource_contents_the_policy_denies_are_withheld_wherever_they_come(
    tmp_path: Path,
) -> None:
    """A denied URI's contents do not pass embedded in a tool's result or a prompt either."""
    policy = {"default": "allow", "rules": [{"deny": {"resource": "test://embedded-*"}}]}
    async with (
        in_process(tmp_path, policy, SERVER) as front,
        Client(front.server, mode="legacy") as client,
    ):
        result = await client.call_tool("test_embedded_resource", {})
        [block] = result.content
        assert isinstance(block, types.EmbeddedResource)
        embedded = block.resource
        assert isinstance(embedded, types.TextResourceContents)
        assert embedded.text.startswith("[signoff withheld test://embedded-resource: denied")

        name = "test_prompt_with_embedded_resource"
        withheld = await client.get_prompt(name, {"resourceUri": "test://embedded-x"})
        kept = await client.get_prompt(name, {"resourceUri": "test://notes"})
        said = [m.content.resource for m in (withheld.messages[0], kept.messages[0])]  # type: ignore[union-attr]
        assert [c.text for c in said] == [  # type: ignore[union-attr]
            "[signoff withheld test://embedded-x: denied: resource test://embedded-*]",
            "Embedded resource content for testing.",
        ]


async def test_a_read_is_judged_by_its_one_spelling_and_one_without_it_is_refused(
    tmp_path: Path,
) -> None:
    """A deny holds however the URI is written; a URI with no one reading keeps nothing."""
    policy = {"default": "allow", "rules": [{"deny": {"resource": "test://static-text"}}]}
    async with (
        in_process(tmp_path, policy, SERVER) as front,
        Client(front.server, mode="legacy") as client,
    ):
        for spelling in ("TEST://static-text", "test://Static-Text", "test://static-%74ext"):
            with pytest.raises(MCPError, match="signoff blocked this read"):
                await client.read_resource(spelling)
        kept = len(await front.store.audit_log())
        for unread, why in (
            ("test://" + "a" * 3000, "longer than 2048 bytes"),
            ("test://template/1/../../static-text", "'.' or '..' segments"),
            ("test://template/1/%2e%2e/data", "'.' or '..' segments"),
            ("test://template//1/data", "doubles a slash"),
            ("test://static%2Ftext", "authority holds a slash"),
            ("static-text", "no scheme"),
        ):
            with pytest.raises(MCPError, match=why):
                await client.read_resource(unread)
        assert await front.store.list_approvals() == []
        assert len(await front.store.audit_log()) == kept  # refused before anything was kept
        read = await client.read_resource("TEST://template/%37/data")  # its one spelling: allowed
        assert '"id": "7"' in read.contents[0].text  # type: ignore[union-attr]


# Spellings of `file://<path>` that a server reading the URI's path reads as that file: judged as
# it (`KEPT`), or refused, the file unread (`UNREAD`).
KEPT = (
    "file://{path}",
    "file:{path}",
    "file://localhost{path}",
    "FILE://LocalHost{path}",
    "file://127.0.0.1{path}",
    "file://[::1]{path}",
    "file://[0:0:0:0:0:0:0:1]{path}",
    "file://%6Cocalhost{path}",
)
UNREAD = (
    "file://localhost:80{path}",
    "file://127.0.0.1:80{path}",
    "file://[::1]:80{path}",
    "file://anyone@localhost{path}",
    "file://anyone@{path}",
    "file://example.com{path}",
    "file://127.1{path}",
    "file://{path}?raw",
    "file://{path}#top",
)


def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A public file, a secret one and a private one, each a line of text."""
    public, secret, private = (tmp_path / d / "file.txt" for d in ("public", "secrets", "private"))
    for path in (public, secret, private):
        path.parent.mkdir()
        path.write_text(f"the {path.parent.name} text")
    return public, secret, private


async def test_a_denied_file_is_not_read_however_its_uri_names_the_host(tmp_path: Path) -> None:
    """The server reads a file: URI's path whatever its authority says: the deny holds for
    every spelling of the file's host, port and user, and what has no one reading is refused."""
    public, secret, _ = files(tmp_path)
    policy = {"default": "allow", "rules": [{"deny": {"resource": f"file://{secret.parent}/*"}}]}
    async with (
        in_process(tmp_path, policy) as front,
        Client(front.server, mode="legacy") as client,
    ):
        for spelling in KEPT:
            read = await client.read_resource(spelling.format(path=public))
            assert [c.text for c in read.contents] == ["the public text"]  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="signoff blocked this read: denied") as blocked:
                await client.read_resource(spelling.format(path=secret))
            assert blocked.value.error.data == {"status": "blocked"}
        kept = len(await front.store.audit_log())
        for spelling in UNREAD:
            for path in (public, secret):
                with pytest.raises(MCPError, match="read the resource by its plain URI"):
                    await client.read_resource(spelling.format(path=path))
        assert len(await front.store.audit_log()) == kept  # refused before anything was kept
        forwarded = [e.data["tool"] for e in await front.store.audit_log() if e.action == "forward"]
        assert set(forwarded) == {f"file://{public}"}  # each read of it by its one spelling


async def test_contents_of_a_denied_file_are_withheld_however_their_uri_names_the_host(
    tmp_path: Path,
) -> None:
    """Embedded contents are judged by the same one spelling: a denied file's pass under none
    of its host's spellings, and those with no one reading are withheld too."""
    _, secret, _ = files(tmp_path)
    policy = {"default": "allow", "rules": [{"deny": {"resource": f"file://{secret.parent}/*"}}]}
    async with (
        in_process(tmp_path, policy) as front,
        Client(front.server, mode="legacy") as client,
    ):
        for spelling in KEPT + UNREAD:
            uri = spelling.format(path=secret)
            carried = await client.call_tool("carry", {"uri": uri})
            assert carried.structured_content is not None
            [found] = carried.structured_content["found"]
            assert found["text"].startswith(f"[signoff withheld {uri}: "), uri
            assert "contents of" not in json.dumps(carried.model_dump()), uri


async def test_a_file_a_rule_asks_about_is_asked_about_however_its_uri_names_the_host(
    tmp_path: Path,
) -> None:
    """Every spelling of the file is one read that waits for a person, under its one name; none
    reads it meanwhile."""
    _, _, private = files(tmp_path)
    policy = {"default": "allow", "rules": [{"ask": {"resource": f"file://{private.parent}/*"}}]}
    async with (
        in_process(tmp_path, policy, wait=0.1) as front,
        Client(front.server, mode="legacy") as client,
    ):
        for spelling in KEPT:
            with pytest.raises(MCPError, match="waits for a person's approval"):
                await client.read_resource(spelling.format(path=private))
        for spelling in UNREAD:
            with pytest.raises(MCPError, match="read the resource by its plain URI"):
                await client.read_resource(spelling.format(path=private))
        [held] = await front.store.list_approvals()
        assert (held.call.kind, held.call.name) == ("resource", f"file://{private}")
        assert [e for e in await front.store.audit_log() if e.action == "forward"] == []


async def test_several_servers_keep_their_prefixes_for_tools_prompts_and_resources(
    tmp_path: Path,
) -> None:
    policy = {"default": "allow", "rules": [{"ask": {"prompt": "*"}, "server": "b"}]}
    async with in_process(tmp_path, policy, SERVER, names=("a", "b"), wait=0.1) as front:
        store = front.store
        async with Client(front.server, mode="legacy") as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"a_test_simple_text", "b_test_simple_text"} <= tools
            prompts = {p.name for p in (await client.list_prompts()).prompts}
            assert {"a_test_simple_prompt", "b_test_simple_prompt"} <= prompts
            resources = (await client.list_resources()).resources
            assert ("a_static-text", "test://static-text") in {
                (r.name, str(r.uri)) for r in resources
            }
            got = await client.get_prompt("a_test_simple_prompt")
            assert text_of(got) == "This is a simple prompt for testing."
            with pytest.raises(MCPError, match="waits for a person's approval"):
                await client.get_prompt("b_test_simple_prompt")  # b's own name, b's rule
            [held] = await store.list_approvals()
            assert (held.call.name, held.call.server, held.call.kind) == (
                "test_simple_prompt", "b", "prompt",
            )  # fmt: skip
            read = await client.read_resource("test://template/7/data")  # a's template first
            assert '"id": "7"' in read.contents[0].text  # type: ignore[union-attr]


async def test_contents_a_client_may_not_read_are_withheld_from_reads_tools_and_sampling(
    tmp_path: Path,
) -> None:
    """Of a folder's read, only what the policy allows outright passes (what it would ask
    about, or denies, is withheld); a denied URI's contents pass neither in a tool's structured
    content nor in what a server asks the client's model."""
    policy = {
        "default": "allow",
        "rules": [
            {"ask": {"resource": "memo://private/*"}},
            {"deny": {"resource": "memo://secret/*"}},
        ],
    }
    asked: list[types.CreateMessageRequestParams] = []

    async def model(context: Any, params: types.CreateMessageRequestParams) -> Any:
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="ok"), model="m"
        )

    async with (
        in_process(tmp_path, policy) as front,
        Client(front.server, mode="legacy", sampling_callback=model) as client,
    ):
        read = await client.read_resource("memo://folder")
        said = {str(c.uri): c.text for c in read.contents}  # type: ignore[union-attr]
        assert said["memo://folder/a"] == "contents of memo://folder/a"
        assert said["memo://private/b"].startswith(
            "[signoff withheld memo://private/b: reading it needs a person's approval"
        )
        assert said["memo://secret/c"].startswith("[signoff withheld memo://secret/c: denied")

        carried = await client.call_tool("carry", {"uri": "memo://secret/x"})
        assert carried.structured_content == {
            "found": [{"uri": "memo://secret/x", "mimeType": "text/plain",
                       "text": "[signoff withheld memo://secret/x: denied: resource memo://secret/*]"}]
        }  # fmt: skip
        assert "contents of memo://secret/x" not in json.dumps(carried.model_dump())

        answered = await client.call_tool("ask_model", {"uri": "memo://secret/y"})
        assert not answered.is_error, answered
        [params] = asked
        assert params.metadata is not None
        assert params.metadata["attached"]["text"].startswith("[signoff withheld memo://secret/y")


async def test_completions_never_name_what_a_deny_hides(tmp_path: Path) -> None:
    policy = {"default": "allow", "rules": [{"deny": {"resource": "test://template/secret/*"}}]}
    async with (
        in_process(tmp_path, policy, SERVER) as front,
        Client(front.server, mode="legacy") as client,
    ):
        await client.list_resource_templates()
        ref = types.ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data")
        answer = await client.complete(ref, {"name": "id", "value": ""})
        assert answer.completion.values == ["1", "22"]


async def test_past_its_sessions_a_client_shares_the_gateways_connections(tmp_path: Path) -> None:
    """Each session with connections of its own is a process per stdio server: `sessions`
    bounds them; the next client is served, but what a server asks of it is refused."""
    async with in_process(tmp_path, {"default": "allow"}, sessions=1) as front:
        async with (
            Client(front.server, mode="legacy", list_roots_callback=roots("/a")) as first,
            Client(front.server, mode="legacy", list_roots_callback=roots("/b")) as second,
        ):
            own = await first.call_tool("roots", {})
            shared = await second.call_tool("roots", {})
        assert json.loads(own.content[0].text) == ["file:///a"]  # type: ignore[union-attr]
        assert json.loads(shared.content[0].text) == "no roots capability"  # type: ignore[union-attr]


async def test_a_held_calls_progress_keeps_growing_from_the_wait_to_the_server(
    tmp_path: Path,
) -> None:
    """The wait reports progress on the client's token, then the approved call's own progress
    from the server goes on the same token, counted on from past the wait's: it only grows."""
    heard: list[float] = []
    waited = asyncio.Event()

    async def reported(progress: float, total: float | None, message: str | None) -> None:
        heard.append(progress)
        waited.set()

    async def approve_once_waiting(context: Any, params: Any) -> types.ElicitResult:
        await waited.wait()  # the wait has reported: the server's progress comes after it
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    policy = {"default": "allow", "rules": [{"ask": "test_tool_with_progress"}]}
    async with (
        in_process(tmp_path, policy, SERVER, progress_every=30.0) as front,
        Client(front.server, mode="legacy", elicitation_callback=approve_once_waiting) as client,
    ):
        result = await client.call_tool("test_tool_with_progress", {}, progress_callback=reported)
    assert not result.is_error
    assert len(heard) == 4  # the wait's one report, then the server's three
    assert all(a < b for a, b in itertools.pairwise(heard)), heard
