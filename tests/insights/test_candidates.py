"""Candidates: how each bar a suggestion has to clear is told, and which candidates are told
first."""

from __future__ import annotations

from signoff.insights.candidates import Candidate, Need, nearest


def candidate(tool: str, approved: int, dropped: str | None = None) -> Candidate:
    needs = (Need(what="approvals", one="approval", have=approved, need=20),)
    return Candidate(kind="allow", rule=None, tool=tool, agent=None, subject=f"allow `{tool}`",
                     argument=None, needs=needs, dropped=dropped)  # fmt: skip


def test_a_share_just_below_its_bar_is_never_shown_as_reaching_it():
    just_below = Need(what="approved unchanged", have=489 / 499, need=0.98, share=True)
    rounded = Need(what="approved unchanged", have=22 / 23, need=0.98, share=True)

    assert just_below.shown() == "97.9% approved unchanged, needs 98%"
    assert rounded.shown() == "95.7% approved unchanged, needs 98%"
    assert not just_below.met


def test_a_count_of_one_is_told_in_the_singular():
    assert candidate("send_email", 1).text == "allow `send_email`: 1 approval, needs 20"
    assert candidate("send_email", 12).text == "allow `send_email`: 12 approvals, needs 20"


def test_the_nearest_come_first_and_only_a_few_are_told():
    dropped = candidate("d", 25, dropped="it would override a deny rule beside the rule that asked")
    many = [candidate(f"t{n}", n) for n in range(1, 10)]

    told = nearest([*many, dropped])

    assert [c.tool for c in told] == ["d", "t9", "t8", "t7", "t6"]
    assert dropped.text.endswith("; not offered: it would override a deny rule beside the rule "
                                 "that asked")  # fmt: skip
