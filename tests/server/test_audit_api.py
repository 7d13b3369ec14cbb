"""`GET /v1/audit` and `GET /v1/audit/verify` over a log tampered with by raw SQL: damaged rows
are shown as damaged, faults are named, a checkpoint that cannot be trusted is a 400 — never a
500."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from signoff import Policy
from signoff.gate import Gate
from signoff.redaction import Redaction
from signoff.server import Auth, Principal, Service, create_app
from signoff.store import AuditRecord, Checkpoint, SQLStore

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
KEY = "k3y-that-the-database-never-sees"
Client = Callable[..., contextlib.AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
async def log(store: SQLStore, monkeypatch: pytest.MonkeyPatch) -> SQLStore:
    """Four entries; the server's audit key set."""
    monkeypatch.setenv("SIGNOFF_AUDIT_KEY", KEY)
    await store.append_audit(
        [
            AuditRecord(actor="alice", action="decision", subject=f"a{n}", data={"n": n}, at=T0)
            for n in range(1, 5)
        ]
    )
    return store


@pytest.fixture
def api(log: SQLStore) -> Client:
    @contextlib.asynccontextmanager
    async def make(redaction: Redaction | None = None) -> AsyncIterator[httpx.AsyncClient]:
        service = Service(
            store=log,
            gate=Gate(Policy.from_dict({}), log),
            agents=[],
            redaction=redaction or Redaction(),
        )
        app = create_app(service, Auth(tokens={"t": Principal(name="alice")}))
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": "Bearer t"}
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=transport, base_url="http://signoff", headers=headers
            ) as client,
        ):
            yield client

    return make


async def sql(store: SQLStore, *statements: str) -> None:
    await store.run(lambda c: [c.exec_driver_sql(s) for s in statements])


async def test_damaged_entries_are_listed_with_their_problem_never_a_500(
    log: SQLStore, api: Client
):
    deep_object = '{"a":' * 900 + "1" + "}" * 900  # json.loads reads it; encoders would not
    await sql(
        log,
        f"UPDATE audit SET data = '{'[' * 100_000}' WHERE seq = 1",
        f"UPDATE audit SET data = '{deep_object}' WHERE seq = 2",
        f"UPDATE audit SET at = {2**62}, data = 'not json' WHERE seq = 3",
    )
    for redaction in (None, Redaction(["password"])):
        async with api(redaction) as client:
            response = await client.get("/v1/audit")
            assert response.status_code == 200
            page = response.json()
            when = "2026-11-22T12:00:00+00:00"
            assert [(e["seq"], e["at"], e["data"], e["problem"]) for e in page["items"]] == [
                (1, when, {}, "its data is nested too deep to read"),
                (2, when, {}, "its data is nested 900 levels deep (more than 100)"),
                (3, None, {}, f"its time {2**62} is out of range (not in the years 1 to 9999)"),
                (4, when, {"n": 4}, None),
            ]
            verified = await client.get("/v1/audit/verify")
            assert verified.status_code == 200
            assert verified.json() == {
                "ok": False,
                "entries": 0,
                "first_bad_entry": 1,
                "reason": "entry 1 was altered or moved: its content does not match its hash; "
                "its data is nested too deep to read",
                "checkpoint": None,
            }


async def test_a_missing_or_doubled_head_row_is_named_and_the_log_still_lists(
    log: SQLStore, api: Client
):
    await sql(log, "DELETE FROM audit_head")
    async with api() as client:
        page = (await client.get("/v1/audit")).json()
        assert (page["length"], [e["seq"] for e in page["items"]]) == (4, [1, 2, 3, 4])
        verified = (await client.get("/v1/audit/verify")).json()
        assert (verified["ok"], verified["first_bad_entry"], verified["reason"]) == (
            False,
            None,
            "the head row is missing: audit_head is empty",
        )


async def test_verify_since_a_signed_checkpoint_catches_the_tail_cut_off(
    log: SQLStore, api: Client
):
    report = await log.verify_audit()
    at = datetime(2026, 11, 23, 9, 30, tzinfo=UTC)
    kept = Checkpoint(seq=4, hash=report.last_hash, at=at).sign(KEY.encode()).text()
    async with api() as client:
        intact = (await client.get("/v1/audit/verify", params={"since": kept})).json()
        assert intact == {
            "ok": True,
            "entries": 4,
            "first_bad_entry": None,
            "reason": "chain intact (4 entries), and entries 1 to 4 are those of the checkpoint "
            "of 2026-11-23T09:30:00Z",
            "checkpoint": {"entries": 4, "at": "2026-11-23T09:30:00+00:00", "signed": True},
        }
        await sql(
            log,
            "DELETE FROM audit WHERE seq > 2",
            "UPDATE audit_head SET seq = 2, hash = (SELECT hash FROM audit WHERE seq = 2)",
        )
        assert (await client.get("/v1/audit/verify")).json()["ok"] is True
        cut = (await client.get("/v1/audit/verify", params={"since": kept})).json()
        assert (cut["ok"], cut["entries"], cut["first_bad_entry"], cut["reason"]) == (
            False,
            2,
            3,
            "entry 3 is gone: the checkpoint of 2026-11-23T09:30:00Z says the log had 4 "
            "entries; it now has 2",
        )


async def test_a_checkpoint_that_cannot_be_trusted_is_a_400_naming_the_problem(
    log: SQLStore, api: Client, monkeypatch: pytest.MonkeyPatch
):
    report = await log.verify_audit()
    signed = Checkpoint(seq=4, hash=report.last_hash, at=T0).sign(KEY.encode()).text()
    forged = Checkpoint(seq=4, hash=report.last_hash, at=T0).sign(b"a key of my own, 16+").text()
    unsigned = Checkpoint(seq=4, hash=report.last_hash, at=T0).text()
    cases: list[tuple[str, str]] = [
        ("nonsense", "'nonsense' is not an audit checkpoint"),
        (forged, "the checkpoint's signature does not match SIGNOFF_AUDIT_KEY"),
        (unsigned, "the checkpoint is unsigned, but SIGNOFF_AUDIT_KEY is set"),
    ]
    async with api() as client:
        for since, problem in cases:
            response = await client.get("/v1/audit/verify", params={"since": since})
            assert response.status_code == 400
            body: dict[str, Any] = response.json()
            assert body["error"] == "CheckpointError" and problem in body["detail"]
        monkeypatch.delenv("SIGNOFF_AUDIT_KEY")
        response = await client.get("/v1/audit/verify", params={"since": signed})
        assert response.status_code == 400
        assert "set SIGNOFF_AUDIT_KEY to the key it was signed with" in response.json()["detail"]
        accepted = await client.get("/v1/audit/verify", params={"since": unsigned})
        assert accepted.json()["checkpoint"]["signed"] is False
