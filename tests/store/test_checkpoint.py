"""Checkpoints of the audit log: one line of text, signed with a key the database never holds."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from signoff.errors import CheckpointError
from signoff.store import Checkpoint
from signoff.store.checkpoint import audit_key

KEY = b"correct horse battery staple"
HASH = "ab" * 32
AT = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_a_signed_checkpoint_reads_back_and_checks_with_its_key():
    made = Checkpoint(seq=57, hash=HASH, at=AT).sign(KEY)
    line = made.text()
    assert line.startswith(f"signoff-audit-1.57.2026-11-22T12:00:00Z.{HASH}.")
    assert " " not in line and len(line) < 200
    assert Checkpoint.parse(line) == made
    Checkpoint.parse(f"  {line}\n").check(KEY)  # as pasted from a file


def test_an_unsigned_checkpoint_says_so_and_checks_without_a_key():
    line = Checkpoint(seq=0, hash="0" * 64, at=AT).text()
    assert line == f"signoff-audit-1.0.2026-11-22T12:00:00Z.{'0' * 64}.unsigned"
    parsed = Checkpoint.parse(line)
    assert not parsed.signed
    parsed.check(None)


def test_a_forged_signature_is_refused():
    made = Checkpoint(seq=57, hash=HASH, at=AT).sign(KEY)
    moved_back = made.text().replace(".57.", ".40.")
    with pytest.raises(CheckpointError, match="signature does not match SIGNOFF_AUDIT_KEY"):
        Checkpoint.parse(moved_back).check(KEY)
    with pytest.raises(CheckpointError, match="altered or forged, or signed with another key"):
        Checkpoint.parse(made.text()).check(b"another key, sixteen+ chars")


def test_a_signed_checkpoint_without_a_key_cannot_be_checked():
    made = Checkpoint(seq=57, hash=HASH, at=AT).sign(KEY)
    with pytest.raises(CheckpointError, match="set SIGNOFF_AUDIT_KEY to the key it was signed"):
        made.check(None)


def test_an_unsigned_checkpoint_is_refused_when_a_key_is_configured():
    # Otherwise whoever rewrote the log could hand over an unsigned checkpoint of the rewrite.
    with pytest.raises(CheckpointError, match="the checkpoint is unsigned, but SIGNOFF_AUDIT_KEY"):
        Checkpoint(seq=57, hash=HASH, at=AT).check(KEY)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "'' is not an audit checkpoint"),
        ("hello", "'hello' is not an audit checkpoint"),
        ("x" * 500, "'" + "x" * 36 + "... is not an audit checkpoint"),
        (f"signoff-audit-2.5.2026-11-22T12:00:00Z.{HASH}.unsigned", "is not an audit checkpoint"),
        (f"signoff-audit-1.-5.2026-11-22T12:00:00Z.{HASH}.unsigned", "entry count '-5' is not"),
        (f"signoff-audit-1.05.2026-11-22T12:00:00Z.{HASH}.unsigned", "entry count '05' is not"),
        (f"signoff-audit-1.{2**63}.2026-11-22T12:00:00Z.{HASH}.unsigned", "is not a number"),
        (f"signoff-audit-1.5.2026-13-22T12:00:00Z.{HASH}.unsigned", "time '2026-13-22T12:00"),
        (f"signoff-audit-1.5.yesterday.{HASH}.unsigned", "time 'yesterday' is not a UTC time"),
        ("signoff-audit-1.5.2026-11-22T12:00:00Z.abc.unsigned", "hash 'abc' is not 64 hex"),
        (f"signoff-audit-1.5.2026-11-22T12:00:00Z.{HASH.upper()}.unsigned", "is not 64 hex"),
        (f"signoff-audit-1.5.2026-11-22T12:00:00Z.{HASH}.maybe", "signature 'maybe' is neither"),
        (f"signoff-audit-1.0.2026-11-22T12:00:00Z.{HASH}.unsigned", "empty log has a hash of 64"),
    ],
)
def test_text_that_is_no_checkpoint_is_refused_naming_the_problem(text: str, problem: str):
    with pytest.raises(CheckpointError) as raised:
        Checkpoint.parse(text)
    assert problem in str(raised.value)


def test_the_key_comes_from_the_environment_and_must_be_long():
    assert audit_key({}) is None
    assert audit_key({"SIGNOFF_AUDIT_KEY": "  "}) is None
    assert audit_key({"SIGNOFF_AUDIT_KEY": "k" * 16}) == b"k" * 16
    with pytest.raises(CheckpointError, match="shorter than 16 characters"):
        audit_key({"SIGNOFF_AUDIT_KEY": "secret"})
