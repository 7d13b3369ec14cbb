"""The hot paths' statements on SQLite's driver (`signoff.store.lean`), and reads beside the
writer: each answers as SQLAlchemy would, on both backends."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import bindparam, event, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, NoResultFound

from signoff.errors import StoreError
from signoff.store import SQLStore, open_store, schema
from signoff.store.lean import execute

notes = schema.notes
INSERT = insert(notes)
BY_CHANNEL = select(notes.c.key, notes.c.data).where(notes.c.channel == bindparam("ch"))
ONE_OF_KEYS = (
    select(notes.c.key)
    .where(notes.c.channel == "c1", notes.c.key.in_(bindparam("keys", expanding=True)))
    .order_by(notes.c.key)
)
RENAME = update(notes).where(notes.c.channel == "c1").values(data=bindparam("d"))


def row(channel: str, key: str) -> dict[str, Any]:
    return {"channel": channel, "subject": "s", "key": key, "data": "{}", "at": 1}


async def test_lean_statements_answer_as_sqlalchemy_does(store: SQLStore):
    def work(c: Connection) -> dict[str, Any]:
        execute(c, INSERT, [row("c1", "k1"), row("c1", "k2"), row("c2", "k3")])  # many rows
        execute(c, INSERT, row("c1", "k4"))
        listed = execute(c, BY_CHANNEL, {"ch": "c1"}).all()
        return {
            "keys": [r.key for r in listed],  # rows with attributes named by their columns
            "same": [tuple(r) for r in listed]
            == [tuple(r) for r in c.execute(BY_CHANNEL, {"ch": "c1"})],
            "in": list(execute(c, ONE_OF_KEYS, {"keys": ["k4", "k1", "k3"]}).scalars()),
            "first": execute(c, BY_CHANNEL, {"ch": "none"}).first(),
            "scalar": execute(c, BY_CHANNEL, {"ch": "c2"}).scalar(),
            "updated": execute(c, RENAME, {"d": '{"x": 1}'}).rowcount,  # a literal in WHERE
        }

    seen = await store.run(work)
    assert seen == {
        "keys": ["k1", "k2", "k4"],
        "same": True,
        "in": ["k1", "k4"],
        "first": None,
        "scalar": "k3",
        "updated": 3,
    }
    with pytest.raises(NoResultFound):
        await store.run(lambda c: execute(c, BY_CHANNEL, {"ch": "none"}).one())


async def test_a_refused_lean_statement_raises_sqlalchemys_error_and_writes_nothing(
    store: SQLStore,
):
    def twice(c: Connection) -> None:
        execute(c, INSERT, row("c1", "same"))
        execute(c, INSERT, row("c1", "same"))

    def caught(c: Connection) -> str:
        try:
            twice(c)
        except IntegrityError as exc:  # SQLAlchemy's, as for any statement
            return type(exc).__name__
        return "nothing raised"

    # Raised out of the transaction, it rolls it back (nothing of it is kept), and the store says
    # the database refused it, as for any statement.
    with pytest.raises(StoreError, match=r"(?i)unique"):
        await store.run(twice)
    assert await store.run(lambda c: execute(c, BY_CHANNEL, {"ch": "c1"}).all()) == []
    assert (await store.run(caught)).endswith("IntegrityError")


async def test_listeners_still_see_every_lean_statement(store: SQLStore):
    seen: list[tuple[str, Any, bool]] = []

    def listen(_c: Any, _cursor: Any, statement: str, params: Any, _ctx: Any, many: bool) -> None:
        seen.append((statement.split()[0], params, many))

    event.listen(store.engine, "before_cursor_execute", listen)
    try:
        await store.run(lambda c: execute(c, INSERT, [row("c1", "k1"), row("c1", "k2")]))
    finally:
        event.remove(store.engine, "before_cursor_execute", listen)
    [(_, params, many)] = [s for s in seen if s[0] == "INSERT"]
    assert many
    assert len(params) == 2  # both rows' values (named on SQLite, positional on asyncpg)


async def test_a_read_goes_on_while_a_write_is_in_progress(tmp_path: Path):
    """On a SQLite file, reads have threads of their own: one never waits for a write."""
    async with open_store(f"sqlite:///{tmp_path / 'signoff.db'}") as store:
        inside, release = threading.Event(), threading.Event()

        def slow_write(c: Connection) -> None:
            execute(c, INSERT, row("c1", "written"))
            inside.set()
            assert release.wait(60), "the test never released the write"

        writing = asyncio.ensure_future(store.run(slow_write))
        try:
            await asyncio.to_thread(inside.wait, 60)
            # The write holds the store's writer thread and SQLite's write lock: the read still
            # answers, with what was committed before the write began.
            read = await store.run(
                lambda c: execute(c, BY_CHANNEL, {"ch": "c1"}).all(), write=False
            )
            assert read == []
            assert not writing.done()
        finally:
            release.set()
            await writing
        keys = await store.run(
            lambda c: execute(c, BY_CHANNEL, {"ch": "c1"}).scalars(), write=False
        )
        assert keys == ["written"]
