"""`signoff assign` and a call that needs several people, from a shell, on a database."""

from __future__ import annotations

import asyncio

from signoff import Policy, ToolCall
from signoff.gate import CheckContext, Gate
from signoff.store import open_store
from tests.cli.test_decide_cli import signoff

POLICY = Policy.from_dict(
    {
        "rules": [
            {"ask": "wire", "approvals": {"count": 2, "from": ["finance"]}},
            {"ask": "drain", "approvers": ["ops"]},
        ]
    }
)


async def held(url: str, tool: str) -> str:
    async with open_store(url) as store:
        context = CheckContext(thread_id="t", requested_by="bob")
        [outcome] = await Gate(POLICY, store).check([ToolCall(id=tool, name=tool)], context)
        assert outcome.approval is not None
        return outcome.approval.id


async def stored(url: str, approval_id: str) -> tuple[str, str | None, str | None]:
    async with open_store(url) as store:
        approval = await store.get_approval(approval_id)
    assigned = approval.assigned
    return (
        approval.status,
        None if assigned is None else assigned.to,
        None if assigned is None else assigned.note,
    )


def test_each_approval_is_counted_and_the_command_says_what_is_still_needed(store_url: str):
    approval_id = asyncio.run(held(store_url, "wire"))
    code, out, err = signoff("approve", approval_id, "--database", store_url, "--as", "olga")
    assert (code, err) == (0, ""), err
    assert out == (
        f"{approval_id}: approved by olga (wire); it still needs 1 more approval, among them "
        "one each with the roles finance\n"
    )
    code, out, _ = signoff(
        "approve", approval_id, "--database", store_url, "--as", "fay", "--role", "finance"
    )
    assert (code, out) == (0, f"{approval_id}: approved by fay (wire)\n")


def test_assign_hands_a_call_on_with_a_note(store_url: str):
    approval_id = asyncio.run(held(store_url, "drain"))
    args = ["--database", store_url, "--as", "otto", "--role", "ops"]
    code, out, err = signoff("assign", approval_id, "olga", "--note", "rack 4", *args)
    assert (code, out, err) == (0, f"{approval_id}: assigned to olga (drain)\n", "")
    assert asyncio.run(stored(store_url, approval_id)) == ("pending", "olga", "rack 4")
    # Only someone who may decide it hands it on.
    code, _, err = signoff("assign", approval_id, "bob", "--database", store_url, "--as", "bob")
    assert code == 1 and "needs one of the roles" in err, err
    assert asyncio.run(stored(store_url, approval_id)) == ("pending", "olga", "rack 4")
    code, _, err = signoff("assign", approval_id, "role:", *args)
    assert code == 1 and "role:NAME" in err, err
