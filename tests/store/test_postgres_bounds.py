"""Every wait on PostgreSQL is bounded (`signoff.store.postgres`): each session asks the server
to end it when it idles in a transaction or stops acknowledging, and a statement that outlasts
its timeout fails as `StoreUnavailableError` — the API's 503 — rather than hanging. The URL
changes each bound; a bound that is not one is refused, named."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from signoff.errors import StoreError, StoreUnavailableError
from signoff.store import open_store
from signoff.store.postgres import postgres_runner


async def settings(url: str) -> tuple[str, str]:
    async with open_store(url) as store:
        row = await store.run(
            lambda c: c.execute(text(
                "SELECT current_setting('idle_in_transaction_session_timeout'),"
                " current_setting('tcp_user_timeout')"
            )).one(),
            write=False,
        )  # fmt: skip
        return row[0], row[1]


async def test_each_session_asks_the_server_for_the_bounds_the_url_may_change(postgres_url: str):
    assert await settings(postgres_url) == ("30s", "30000")  # ms
    changed = f"{postgres_url}?idle_in_transaction_session_timeout=7s&tcp_user_timeout=1500"
    assert await settings(changed) == ("7s", "1500")
    # Given as none, a setting is not asked for: the server's own stands (here, none).
    assert await settings(f"{postgres_url}?tcp_user_timeout=none&command_timeout=0") == (
        "30s",
        "0",
    )


async def test_a_statement_past_the_command_timeout_fails_as_unavailable(postgres_url: str):
    async with open_store(f"{postgres_url}?command_timeout=0.2") as store:
        with pytest.raises(StoreUnavailableError, match="did not answer"):
            await store.run(lambda c: c.execute(text("SELECT pg_sleep(600)")), write=False)
        # The store goes on: the next statement has a connection of its own.
        assert await store.run(lambda c: c.execute(text("SELECT 1")).scalar(), write=False) == 1


@pytest.mark.parametrize(
    "query", ["command_timeout=soon", "connect_timeout=0", "command_timeout=-1"]
)
def test_a_bound_that_is_not_a_number_of_seconds_is_refused_by_name(query: str):
    name = query.split("=")[0]
    with pytest.raises(StoreError, match=f"URL's {name} must be a number of seconds"):
        postgres_runner(f"postgresql://signoff@db/signoff?{query}")


def test_a_bound_given_twice_or_under_asyncpgs_own_name_is_refused():
    with pytest.raises(StoreError, match="gives command_timeout 2 times: give it once"):
        postgres_runner("postgresql://signoff@db/signoff?command_timeout=5&command_timeout=9")
    with pytest.raises(StoreError, match="URL's timeout is not read: give connect_timeout"):
        postgres_runner("postgresql://signoff@db/signoff?timeout=5")


async def test_only_a_database_that_cannot_serve_is_unavailable(postgres_url: str):
    """A session the server ends (an administrator's command, a crash) is worth trying again:
    unavailable. A statement the database refuses is not: retrying it would only fail again."""
    async with open_store(postgres_url) as store:
        with pytest.raises(StoreUnavailableError, match="cannot serve now"):
            await store.run(
                lambda c: c.execute(text("SELECT pg_terminate_backend(pg_backend_pid())")),
                write=False,
            )
        with pytest.raises(StoreError, match="refused the operation") as refused:
            await store.run(lambda c: c.execute(text("SELECT 1 / 0")), write=False)
        assert not isinstance(refused.value, StoreUnavailableError)
