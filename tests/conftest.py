"""Shared fixtures: a fresh store on each backend (PostgreSQL is this machine's real server); and
a user data folder of the suite's own, so that no command a test runs finds the user's demo."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from signoff.store import SQLStore, open_store
from tests.deadline import HANG

USER_SETTINGS = ("SIGNOFF_SERVER", "SIGNOFF_TOKEN", "SIGNOFF_DATABASE_URL", "SIGNOFF_CONFIG")
"""What a user's shell may set to point the commands somewhere: no test inherits it."""


@pytest.fixture(autouse=True, scope="session")
def own_user_data_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user data folder of every command the suite runs, in process or as a subprocess:
    a demo the user runs (``make demo``) announces itself in theirs, where ``signoff approve``,
    ``inbox``, ``grants`` … with no flags would find it, and a demo a test runs without
    ``--data-dir`` would announce itself there in turn."""
    folder = tmp_path_factory.mktemp("user-data")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(folder))
        for name in USER_SETTINGS:
            patch.delenv(name, raising=False)
        yield folder


EVERY_TEST = any(
    os.environ.get(name, "").lower() not in ("", "0", "false", "no")
    for name in ("CI", "SIGNOFF_TEST_ALL")
)
"""CI and `make test-all` run every test; a developer's `make test` leaves the heaviest to them:
the tests marked ``heavy``, the end-to-end tier below, the PostgreSQL runs of the framework
and protocol tests (each of those runs on SQLite too, and the store's and the gate's PostgreSQL
tests stay), and the shared scenarios' runs through the adapters of whole processes. A test file
named on the command line runs whole."""
_POSTGRES_IN_CI = ("tests/integrations/", "tests/protocols/")
_SHARED_SCENARIOS = "tests/integrations/test_scenarios"
_ADAPTERS_IN_CI = ("claude-agent-sdk", "mcp-gateway")
"""The adapters whose runs of the shared scenarios are whole processes (Claude Code's CLI a run;
the gateway's MCP servers): `make test` leaves those runs to CI and keeps their own test files
(tests/integrations/test_claude_agent_sdk.py, tests/protocols/test_mcp_*.py)."""

END_TO_END: dict[str, str] = {
    # Each proves its promise through whole processes (servers, browsers, framework workers, npm
    # and OpenID peers, a wheel in a fresh venv); `make test` keeps the same promises' in-process
    # tests, and CI and `make test-all` run these too: with the heavy tests and the PostgreSQL
    # runs, about half of the whole suite's time on the quiet 2-core machine (make test's pytest
    # 5 min, make test-all's 12).
    "tests/protocols/test_mcp_conformance.py": "the MCP conformance suite through the gateway",
    "tests/verify/test_model.py": "Spin's deep searches of the protocols' models",
    "tests/test_setups.py": "each framework guide's app, run as written from an empty folder",
    "tests/test_people_docs.py": "the people pages' shell examples against a server of their own",
    "tests/test_operations_docs.py": "the operations page's examples against a server of their own",
    "tests/test_sign_on_docs.py": "the sign-on page's trial: an OpenID provider, Chromium",
    "tests/insights/test_docs.py": "the insights page's commands against a server of their own",
    "tests/test_dist.py": "the wheel installed in a fresh venv",
    "tests/server/test_fuzz.py": "generated requests against a running server",
    "tests/policy/test_property.py": "the compiled engine against a plain loop, property-based",
    "tests/server/test_oidc_sign_out.py": "sign-out across replicas with a real OpenID provider",
    "tests/server/test_now.py": "a replica an hour ahead (libfaketime) beside another",
    "tests/server/test_demo.py": "`signoff demo` started, reset and stopped as a process",
    "tests/gate/test_processes.py": "gates in separate processes deciding at once",
    "tests/agent/test_chaos.py": "agent workers killed at random",
    "tests/agent/test_processes.py": "agent runs resumed by other processes",
    "tests/test_prometheus.py": "a real Prometheus scraping a server",
    "tests/integrations/test_langchain.py": "LangGraph workers killed in a tool, resumed elsewhere",
    "tests/integrations/test_google_adk.py": "ADK sessions resumed by other processes",
    "tests/integrations/test_pydantic_ai.py": "Pydantic AI threads resumed by other processes",
    "tests/integrations/test_llama_index.py": "LlamaIndex threads resumed by other processes",
    "tests/integrations/test_strands_processes.py": "Strands sessions resumed by other processes",
    "tests/integrations/test_agent_framework_processes.py": "Agent Framework: other processes",
    "tests/hooks/test_claude_code_docs.py": "the Claude Code page: its server, the CLI, Chromium",
    "tests/hooks/test_gemini_cli_docs.py": "the Gemini CLI page: its server, the CLI",
    "tests/hooks/test_gemini_cli.py": "the real Gemini CLI behind the hooks, a process a call",
    "tests/cli/test_program.py": "the installed program's banner and help, as a process",
    "tests/cli/test_discovery.py": "commands finding the demo that runs here",
    "tests/web/test_versions.py": "Chromium: a card's version through edits on two pages",
    "tests/web/test_approval_page.py": "Chromium: an approval's own page, on a phone too",
    "tests/web/test_decisions.py": "Chromium: each decision kind from the inbox",
    "tests/web/test_papercuts.py": "Chromium: the pages' small print",
    "tests/web/test_sign_on.py": "Chromium: sign-on with a real OpenID provider",
    "tests/web/test_sign_in.py": "Chromium: sign-in with a token",
    "tests/web/test_insights.py": "Chromium: the insights page",
    "tests/web/test_previews.py": "Chromium: previews on cards",
    "tests/web/test_frameworks.py": "Chromium: a framework call's card",
    "tests/web/test_metrics_channel.py": "Chromium: a decision counted as the web's",
    "tests/web/test_handovers.py": "Chromium: handovers",
    "tests/web/test_threads.py": "Chromium: a conversation's runs",
    "tests/web/test_schema_form.py": "Chromium: the edit form from a schema",
    "tests/web/test_slack_preview.py": "Chromium: a Slack message's preview",
}
"""The end-to-end tier: whole files `make test` leaves to CI and `make test-all`."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gone = [name for name in END_TO_END if not (Path(str(config.rootpath)) / name).is_file()]
    if gone:
        raise pytest.UsageError(f"tests/conftest.py's END_TO_END names files that are gone: {gone}")
    if EVERY_TEST:
        return
    heavy = pytest.mark.skip(reason="heavy: CI and `make test-all` run it")
    postgres = pytest.mark.skip(
        reason="the PostgreSQL run of a framework or protocol test: CI and `make test-all` run it"
    )
    processes = pytest.mark.skip(
        reason="a shared scenario through an adapter of whole processes: CI and `make test-all` "
        "run it (make test runs the adapter's own tests)"
    )
    here = Path(config.invocation_params.dir)
    named = {(here / arg.split("::")[0]).resolve() for arg in config.args}
    root = Path(str(config.rootpath))
    for item in items:
        if item.path in named:
            continue
        if item.get_closest_marker("heavy"):
            item.add_marker(heavy)
            continue
        where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        if where in END_TO_END:
            item.add_marker(
                pytest.mark.skip(
                    reason=f"end to end: {END_TO_END[where]} (CI and `make test-all` run it)"
                )
            )
            continue
        callspec = getattr(item, "callspec", None)
        if (
            callspec is not None
            and "postgres" in callspec.id.split("-")
            and item.path.is_relative_to(root)
            and item.path.relative_to(root).as_posix().startswith(_POSTGRES_IN_CI)
        ):
            item.add_marker(postgres)
            continue
        if (
            callspec is not None
            and where.startswith(_SHARED_SCENARIOS)
            and any(f"{adapter}-" in callspec.id for adapter in _ADAPTERS_IN_CI)
        ):
            item.add_marker(processes)


PG_ADMIN = os.environ.get("SIGNOFF_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


async def _postgres_available() -> bool:
    import asyncpg

    try:
        connection = await asyncpg.connect(PG_ADMIN, timeout=HANG)  # refused at once if down
    except (OSError, asyncpg.PostgresError):
        return False
    await connection.close()
    return True


@contextlib.asynccontextmanager
async def fresh_postgres_database(*, empty: bool = False) -> AsyncIterator[str]:
    """A PostgreSQL database of the test's own, with signoff's schema and nothing in it — or,
    with `empty`, without even the schema (to migrate it), dropped afterwards.

    Making and migrating a database takes a third of a second, emptying one a few
    milliseconds: a process keeps its databases for the next tests and empties each before it
    gives it out again (its other sessions ended first), unless a test changed its schema —
    then it makes another."""
    import asyncpg

    if not await _postgres_available():
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is not reachable at {PG_ADMIN} and CI must test it")
        pytest.skip(f"PostgreSQL is not reachable at {PG_ADMIN}")
    admin = await asyncpg.connect(PG_ADMIN)
    try:
        if empty:
            name = await _create(admin)
            try:
                yield _url(name)
            finally:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return
        name = await _kept_database(admin)
        try:
            yield _url(name)
        finally:
            _IDLE.append(name)  # emptied when given out next
    finally:
        await admin.close()


_IDLE: list[str] = []
"""This process's databases with signoff's schema, free for the next test."""
_KEPT: list[str] = []
"""Every such database this process made (dropped when its tests end)."""
_SCHEMA: list[str] = []
"""The fingerprint of signoff's schema as migrating makes it."""
# The schema as it stands: every column, index, constraint, trigger, function and view (a test
# that changes one — the audit's tamper tests drop a table's key — leaves a database to be made
# anew).
_FINGERPRINT = """
SELECT md5(
  coalesce((SELECT string_agg(concat_ws(':', table_name, column_name, data_type, is_nullable,
                                        column_default, character_maximum_length),
                              ',' ORDER BY table_name, column_name)
            FROM information_schema.columns WHERE table_schema = 'public'), '')
  || coalesce((SELECT string_agg(indexname || indexdef, ',' ORDER BY indexname)
               FROM pg_indexes WHERE schemaname = 'public'), '')
  || coalesce((SELECT string_agg(conname || pg_get_constraintdef(c.oid), ',' ORDER BY conname)
               FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
               WHERE n.nspname = 'public'), '')
  || coalesce((SELECT string_agg(tgname, ',' ORDER BY tgname)
               FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid
               JOIN pg_namespace n ON n.oid = r.relnamespace
               WHERE n.nspname = 'public' AND NOT t.tgisinternal), '')
  || coalesce((SELECT string_agg(proname, ',' ORDER BY proname)
               FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
               WHERE n.nspname = 'public'), '')
  || coalesce((SELECT string_agg(viewname, ',' ORDER BY viewname)
               FROM pg_views WHERE schemaname = 'public'), ''))
"""


def _url(name: str) -> str:
    base = PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    return f"{base}/{name}"


async def _create(admin: Any) -> str:
    name = f"signoff_test_{uuid.uuid4().hex[:12]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    return name


async def _sealed(admin: Any, name: str) -> str:
    """The kept database `name` under a new name, once every session of it has ended: no client
    of the test before (a server still stopping, a pool that reconnects) reaches it again."""
    import asyncpg

    new = f"signoff_test_{uuid.uuid4().hex[:12]}"
    async with asyncio.timeout(HANG):
        while True:
            await admin.execute(  # waits for each to end (5 s at most)
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                "WHERE datname = $1 AND pid <> pg_backend_pid()",
                name,
            )
            try:
                await admin.execute(f'ALTER DATABASE "{name}" RENAME TO "{new}"')
            except asyncpg.ObjectInUseError:  # one connected again meanwhile
                continue
            _KEPT[_KEPT.index(name)] = new
            return new


async def _kept_database(admin: Any) -> str:
    """A database of this process's with signoff's schema and no rows: an idle one emptied, or
    a new one migrated."""
    import asyncpg

    from signoff.store.migrations import LATEST

    while _IDLE:
        name = await _sealed(admin, _IDLE.pop())
        connection = await asyncpg.connect(_url(name).replace("+asyncpg", ""))
        try:
            if await connection.fetchval(_FINGERPRINT) == _SCHEMA[0]:
                tables = await connection.fetch(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                )
                async with connection.transaction():
                    for (table,) in tables:
                        await connection.execute(f'DELETE FROM "{table}"')
                    await connection.execute(
                        "INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, $1)", "0" * 64
                    )
                    await connection.execute(
                        "INSERT INTO signoff_schema (version) VALUES ($1)", LATEST
                    )
                return name
        finally:
            await connection.close()
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        _KEPT.remove(name)
    name = await _create(admin)
    _KEPT.append(name)
    async with open_store(_url(name)):
        pass
    connection = await asyncpg.connect(_url(name).replace("+asyncpg", ""))
    try:
        fingerprint = await connection.fetchval(_FINGERPRINT)
    finally:
        await connection.close()
    if not _SCHEMA:
        _SCHEMA.append(fingerprint)
    return name


@pytest.fixture(autouse=True, scope="session")
def _drop_kept_databases() -> Iterator[None]:
    """This process's kept databases dropped when its tests are done."""
    yield
    if not _KEPT:
        return

    async def drop() -> None:
        import asyncpg

        admin = await asyncpg.connect(PG_ADMIN)
        try:
            for name in _KEPT:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()

    asyncio.run(drop())


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    async with fresh_postgres_database() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store_url(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[str]:
    """A database on the backend: with signoff's schema and nothing in it — or, for a test
    marked ``empty_database``, without even the schema (a migration's test)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'signoff.db'}"
        return
    empty = request.node.get_closest_marker("empty_database") is not None
    async with fresh_postgres_database(empty=empty) as url:
        yield url


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[SQLStore]:
    async with open_store(store_url) as opened:
        yield opened
