"""``signoff demo``: the bundled example policy, explained over a set of sample calls."""

from __future__ import annotations

from importlib.resources import as_file, files

from signoff.cli.policy import explain_table, load_calls, table_console
from signoff.policy import Policy, PolicyEngine

__all__ = ["demo"]


def demo() -> None:
    """Explain the bundled example policy over sample tool calls, as a verdict table."""
    examples = files("signoff") / "examples"
    with (
        as_file(examples / "policy.yaml") as policy_file,
        as_file(examples / "calls.yaml") as calls,
    ):
        policy = Policy.from_file(policy_file)
        batch = load_calls(calls)
    engine = PolicyEngine(policy)
    console = table_console()
    console.print(
        f"[bold]signoff demo[/]: {len(batch)} sample tool calls against the example policy "
        f"({len(policy.rules)} rules, default {policy.default}, version {policy.version})"
    )
    console.print(explain_table(batch, [engine.explain(call) for call in batch]))
    console.print(
        "allow runs the call, ask holds it for a person, deny blocks it. "
        "Try your own: signoff policy explain --config FILE --tool NAME --args JSON"
    )
