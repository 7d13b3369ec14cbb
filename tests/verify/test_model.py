"""The run-once and resume protocols, model-checked (issue 37): `verify/once.pml` and
`verify/resume.pml` checked with Spin at the bounds CI can afford (`make verify` goes deeper), and
kept in step with the code — every function the models name is signoff's, every state they have
is the code's, and the compare-and-sets they rely on are still in the store's statements."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

import signoff.errors
import signoff.gate.core
import signoff.gate.external
import signoff.gate.once
import signoff.integrations._threads
import signoff.store.external
import signoff.store.histories
import signoff.store.ledger
import signoff.store.pauses
import signoff.store.sql
import signoff.types
from signoff.store import external as external_store
from signoff.store import histories as history_store
from signoff.store import ledger as ledger_store
from signoff.store import pauses as pause_store
from tests.installed import program
from tests.verify.spin import check

MODELS = Path(__file__).parents[2] / "verify"
MODEL = MODELS / "once.pml"
TEXT = MODEL.read_text(encoding="utf-8")
RESUME = MODELS / "resume.pml"
RESUME_TEXT = RESUME.read_text(encoding="utf-8")

MODULES = (
    signoff.gate.core,
    signoff.gate.external,
    signoff.integrations._threads,
    signoff.gate.once,
    signoff.store.sql,
    signoff.store.external,
    signoff.store.pauses,
    signoff.store.histories,
    signoff.store.ledger,
    signoff.types,
    signoff.errors,
)


def named(text: str) -> Iterator[str]:
    """Every name a model's ``@code`` comments give (``Class.method`` or a function)."""
    for found in re.finditer(r"@code ([A-Za-z_][\w.]*(?:, [A-Za-z_][\w.]*)*)", text):
        yield from found.group(1).split(", ")


def resolve(name: str) -> object:
    first, *rest = name.split(".")
    owners = [m for m in MODULES if hasattr(m, first)]
    assert owners, f"the model names {name!r}: no such name in signoff"
    found: object = getattr(owners[0], first)
    for part in rest:
        assert hasattr(found, part), f"the model names {name!r}: {found!r} has no {part!r}"
        found = getattr(found, part)
    return found


@pytest.mark.parametrize(("text", "least"), [(TEXT, 15), (RESUME_TEXT, 6)], ids=["once", "resume"])
def test_every_function_a_model_names_is_signoffs(text: str, least: int):
    names = sorted(set(named(text)))
    assert len(names) >= least  # the comments were read
    for name in names:
        assert callable(resolve(name)), name


def mtypes(text: str = TEXT) -> dict[str, set[str]]:
    """Each of a model's state sets, by the code attribute its comment names."""
    found = re.findall(r"mtype = \{([^}]*)\};\s*/\* .*?\(`([\w.]+)`\)", text)
    return {attribute: {v.strip() for v in values.split(",")} for values, attribute in found}


def literal(owner: type, field: str) -> set[str]:
    hints = typing.get_type_hints(owner)
    return set(typing.get_args(hints[field]))


def test_the_models_states_are_the_codes():
    states = mtypes()
    assert set(states) == {"ExternalRecord.kind", "Approval.status", "LedgerClaim.status"}
    # The model's extra state in each set is the row not written yet.
    assert {s.lower() for s in states["ExternalRecord.kind"] - {"NONE"}} == literal(
        external_store.ExternalRecord, "kind"
    )
    assert {s.lower() for s in states["LedgerClaim.status"] - {"ABSENT"}} == literal(
        external_store.LedgerClaim, "status"
    )
    # An approval's statuses, of which the model keeps those the run-once protocol reads: an
    # edit is approved with other arguments (`decided_digest`), an expiry a rejection.
    code = set(typing.get_args(signoff.types.ApprovalStatus))
    assert {s.lower() for s in states["Approval.status"] - {"NOAPP"}} <= code
    assert {"edited", "expired"} <= code
    [(attribute, pause)] = mtypes(RESUME_TEXT).items()
    assert attribute == "Pause.status"
    assert {s.lower() for s in pause} == set(typing.get_args(pause_store.PauseStatus))


def sql(statement: object) -> str:
    return re.sub(r"\s+", " ", str(statement))


def test_the_compare_and_sets_the_model_relies_on_are_in_the_stores_statements():
    """A result is recorded, a claim renewed or taken over only while the store holds what the
    model says it checks: the key started, by this owner, under this fence; a takeover only
    of a lease run out."""
    finish = sql(ledger_store._FINISH_HELD)
    for column in ("owner", "fence", "status"):
        assert f"ledger.{column} =" in finish, finish
    take = sql(external_store._LEDGER_TAKE)
    assert "ledger.status =" in take and "ledger.lease_until <" in take, take
    assert "fence=(ledger.fence +" in take.replace(" = ", "="), take
    renew = inspect.getsource(external_store.ExternalStore.ledger_renew)
    for column in ("owner", "fence", "status"):
        assert f"_ledger.c.{column} ==" in renew, renew
    # The claim writes the verdict it carries in its own transaction, first.
    assert "judged" in typing.get_type_hints(external_store.ExternalStore.ledger_claim)
    # A pause is claimed while waiting, or resuming with its lease run out; a thread's history
    # grows only from the length its writer read.
    assert "_claimable(now)" in inspect.getsource(external_store.ExternalStore.claim_pause)
    claimable = inspect.getsource(pause_store._claimable)
    assert '_pauses.c.status == "waiting"' in claimable and "_pauses.c.lease_until <" in claimable
    append = inspect.getsource(history_store._append)
    assert "_LENGTH" in append and "!= after" in append
    for writer in (
        external_store.ExternalStore.append_history,
        external_store.ExternalStore.append_paused,
    ):
        assert "_append(" in inspect.getsource(writer)


def spin_or_skip() -> str:
    return program("spin")


@pytest.mark.parametrize("idempotent", [0, 1], ids=["once", "idempotent"])
def test_spin_finds_no_run_twice_no_unapproved_run_and_no_foreign_result(
    tmp_path: Path, idempotent: int
):
    """Every state of two workers, the decider, lapsing leases, an aborted transaction,
    crashes at every step and a crash of the machine or the database server that loses what
    was not on the disk yet: the assertions hold — the call run only as let through, a
    non-idempotent call at most once (an idempotent one's claim does not wait for the disk),
    a result recorded only by a holder that ran it."""
    checked = check(spin_or_skip(), MODEL, tmp_path, {"W": 2, "IDEMPOTENT": idempotent})
    assert checked.errors == 0, checked.report
    assert checked.states > 1_000, checked.report  # a real search, not an empty model


def test_spin_finds_that_worker_zero_always_ends(tmp_path: Path):
    """Liveness, under weak fairness: a worker that does not crash always ends, whatever the
    others do (an acceptance cycle would be a wait that never ends)."""
    checked = check(spin_or_skip(), MODEL, tmp_path, {"W": 2, "IDEMPOTENT": 0}, claim="ends")
    assert checked.errors == 0, checked.report
    assert checked.states > 1_000, checked.report


MUTATIONS = {
    # The ledger takes over a dead worker's non-idempotent call instead of recording it unknown.
    "takeover of a call that is not idempotent": (
        ":: entry == STARTED && !lease_live && IDEMPOTENT ->",
        ":: entry == STARTED && !lease_live ->",
    ),
    # The claim writes its verdict over another process's (a held call, say) without comparing.
    "a claim that overwrites another verdict": (
        ":: else -> unwritten = false; goto permit  /* @code JudgedOtherwise: rolled back */",
        ":: else -> verdict = RUN; verdict_digest = running",
    ),
    # A claim of a call that is not idempotent made without waiting for the disk (the relaxed
    # claim for every call): a crash loses it, and another worker runs the call again.
    "a claim of a call that is not idempotent not waiting for the disk": (
        "    if\n    :: !IDEMPOTENT -> SYNC\n    :: else -> skip\n    fi\n  };",
        "  };",
    ),
    # A result recorded without its fence: a holder taken over records over the new one's.
    "a result recorded unfenced": (
        ":: entry == STARTED && holder == me + 1 && fence == myfence ->\n       /* Recorded",
        ":: entry == STARTED ->\n       /* Recorded",
    ),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_spin_finds_the_bug_in_a_protocol_that_forgets_a_check(tmp_path: Path, mutation: str):
    """The check can fail: the model with one of the code's checks left out lets a call run
    twice or unapproved, and Spin finds it."""
    before, after = MUTATIONS[mutation]
    assert before in TEXT
    model = tmp_path / "mutated.pml"
    model.write_text(TEXT.replace(before, after), encoding="utf-8")
    idempotent = 1 if mutation == "a result recorded unfenced" else 0  # only those are taken over
    checked = check(spin_or_skip(), model, tmp_path, {"W": 2, "IDEMPOTENT": idempotent})
    assert checked.errors > 0, checked.report


def test_spin_finds_a_pause_resumed_at_most_once(tmp_path: Path):
    """Two resumers race for one pause, each may stall past its leases or crash at any step:
    the thread is continued by one resume at most."""
    checked = check(spin_or_skip(), RESUME, tmp_path, {"R": 2})
    assert checked.errors == 0, checked.report
    assert checked.states > 1_000, checked.report


def test_spin_finds_a_second_resume_when_keeping_forgets_the_length(tmp_path: Path):
    model = tmp_path / "mutated.pml"
    before = ":: length == mine -> length++; marked_by = 0;"
    assert before in RESUME_TEXT
    model.write_text(RESUME_TEXT.replace(before, ":: true -> length++; marked_by = 0;"))
    checked = check(spin_or_skip(), model, tmp_path, {"R": 2})
    assert checked.errors > 0, checked.report
