"""The one scenario suite every framework integration passes (ARCHITECTURE §6: "an integration
is an adapter that passes the suite"), like LangGraph's checkpointer conformance suite.

An `Adapter` drives one framework — its real agent, its own test model playing a `Script`,
tools that count every real execution — behind signoff's `ExternalRuns`. The scenarios in
tests/integrations/test_scenarios.py run against every adapter on SQLite and PostgreSQL; they
only speak to the adapter and to signoff's gate, never to a framework.

The scenarios' policy (`POLICY`): ``read_*`` runs, ``delete_*`` and a transfer to mallory are
denied, ``transfer`` asks and forbids self-approval (from 10,000 on it needs two people),
anything else asks. `FROZEN` is the same policy with every transfer denied, for a policy that
changes while calls wait.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from signoff import Policy
from signoff.gate.external import ExternalRuns, Resumed, Resumer

__all__ = [
    "FROZEN",
    "FROZEN_REASON",
    "POLICY",
    "PREVIEWS",
    "Adapter",
    "Call",
    "NotSupported",
    "Outcome",
    "Script",
    "Seen",
    "executions",
    "final_text",
    "record",
    "told",
    "tools",
    "transfer_preview",
]

_RULES: list[dict[str, Any]] = [
    {"allow": "read_*"},
    {"deny": "delete_*"},
    {"deny": "transfer", "when": {"to": {"eq": "mallory"}}},
    {
        "ask": "transfer",
        "when": {"amount": {"ge": 10000}},
        "approvals": {"count": 2},
        "priority": 1,
    },
    {"ask": "transfer", "forbid_self_approval": True},
]

POLICY = Policy.from_dict({"default": "ask", "rules": _RULES})

FROZEN_REASON = "transfers are frozen for the audit"
FROZEN = Policy.from_dict(
    {
        "default": "ask",
        "rules": [{"deny": "transfer", "reason": FROZEN_REASON, "priority": 2}, *_RULES],
    }
)
"""`POLICY` once transfers are frozen: every transfer is denied, above every rule that asks."""

REQUESTER = "alice"
"""Who starts every scenario's run (the framework's user: LangGraph's ``user_id``, ADK's
session user, Agno's ``user_id``)."""


@dataclass(frozen=True)
class Call:
    """One tool call a scripted model turn proposes, with the id the provider gave it."""

    id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)


Script = Sequence[Sequence[Call] | str]
"""The model's turns in order: a turn's tool calls, or its final text. After the script the
model answers ``done``. A final text is followed by the tool results the model was given — a
JSON list of ``[call id, result]`` in the conversation's order — so a scenario can read what
the model was told (`told`)."""


Seen = Mapping[str, int] | None
"""The version of each waiting call a client was shown, by approval id (`Adapter.send`)."""


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """Where a run stands after `start` or a resume."""

    paused: bool
    """It waits on a person (the framework's interrupt, deferred calls, needs-approval)."""
    text: str | None = None
    """The model's final text, when the run finished."""


class NotSupported(Exception):
    """The framework has no such thing (no resume payload of its own, no editable saved state):
    the scenario that needs it is skipped for this adapter, saying why."""


class Adapter(Protocol):
    """One framework behind signoff, as the scenarios drive it. Each tool the scripts name —
    ``transfer(amount: int, to: str)``, ``read_file(path: str)``, ``delete_all()`` — appends one
    line to `side_effects` per real execution (`record`), and returns ``"<name> ok"``."""

    name: str
    runs: ExternalRuns
    side_effects: Path
    model_turns: int
    """How many times the model was called, in every process of this adapter."""
    answers_in_place: bool
    no_ask: str
    """Why its agent has no ``ask_person`` tool (signoff's, in the framework's shape) next to
    the scenarios' tools; empty: it has one, and the question scenarios run."""
    no_thread: str
    """Why a held call's thread does not name the scenario's thread (empty: it does)."""
    """signoff's answer to a call that does not run (a person's response) is the call's
    result as given; False where the framework only lets a hook refuse a call, and the model
    reads the answer as the refusal's reason, in the framework's words (Claude Code)."""

    async def start(self, thread: str, script: Script) -> Outcome:
        """Run the agent on a new `thread`, started by `REQUESTER`, its model playing
        `script`."""
        ...

    def thread_id(self, thread: str) -> str:
        """What signoff keeps `thread`'s calls under is, or holds, this (Claude Code's session
        is a UUID of its own; ADK's thread is app/user/session)."""
        ...

    async def resume(self, thread: str) -> Outcome:
        """Continue the thread after decisions were taken in signoff, the way the integration's
        resumer does (its resume path, not a decision the framework's way)."""
        ...

    async def send(
        self, thread: str, approve: bool, *, user: str | None, seen: Seen = None
    ) -> Outcome:
        """Decide every waiting call the framework's own way — a LangGraph
        ``Command(resume=...)``, an ADK confirmation, a DCAF message — as `user` (None: the
        framework names nobody) and continue. Each decision carries the version of its call its
        sender was shown, as a client sends back what it got: `seen` (approval id → version,
        as `shown` gave them earlier), else what the framework shows now. `NotSupported` where
        decisions only come through signoff."""
        ...

    async def shown(self, thread: str) -> dict[str, int]:
        """The waiting calls as the framework shows them to its app or client at the pause (the
        interrupt's value, the deferred requests, the confirmation request, DCAF's pending
        list): the version of each, by approval id. `NotSupported` where what the framework
        shows has no room for signoff's approval (then only signoff's channels show it)."""
        ...

    def resumer(self, thread: str, *, on_resumed: Callable[[Resumed], Any]) -> Resumer:
        """The integration's own resumer for `thread`'s agent, handing what it resumes to
        `on_resumed`. `NotSupported` where a run is not resumed (it waits in memory)."""
        ...

    def text(self, output: Any) -> str | None:
        """The model's final text in what the framework's resume returned (`Resumed.output`)."""
        ...

    async def tamper(self, thread: str, call: Call) -> None:
        """Replace the waiting call in the framework's saved state (same call id) by `call`,
        as an editor of that state would (LangGraph Studio's ``update_state``). `NotSupported`
        where the framework keeps no state a person can edit."""
        ...


def tools(side_effects: Path) -> list[Callable[..., str]]:
    """The scenarios' tools as plain functions, for an adapter to hand its framework: each
    real execution appends one line to `side_effects`."""

    def transfer(amount: int, to: str) -> str:
        """Move money."""
        record(side_effects, f"transfer {amount} {to}")
        return "transfer ok"

    def read_file(path: str) -> str:
        """Read a file."""
        record(side_effects, f"read_file {path}")
        return "read_file ok"

    def delete_all() -> str:
        """Delete everything."""
        record(side_effects, "delete_all")
        return "delete_all ok"

    return [transfer, read_file, delete_all]


def transfer_preview(amount: int, to: str) -> str:
    """What a transfer would change, as a unified diff of the balances; runs nothing. (The
    MCP scenario server's ``preview_transfer`` says the same.)"""
    return (
        f"--- a/balances\n+++ b/balances\n@@ -1,2 +1,2 @@\n"
        f"-alice: 1000\n-{to}: 0\n+alice: {1000 - amount}\n+{to}: {amount}\n"
    )


PREVIEWS = {"transfer": transfer_preview}
"""The preview functions every adapter hands signoff (`connect(previews=...)`)."""


def record(side_effects: Path, line: str) -> None:
    """Note one real execution of a tool."""
    with side_effects.open("a") as f:
        f.write(line + "\n")


def executions(side_effects: Path) -> list[str]:
    """Every real execution of the scenario's tools, in order: ``transfer 500 acme``."""
    return side_effects.read_text().splitlines() if side_effects.exists() else []


def final_text(text: str, results: Sequence[tuple[str, str]]) -> str:
    """What a scripted model answers last: its `text` and the tool results it was given."""
    return f"{text} {json.dumps([list(r) for r in results])}"


def told(outcome: Outcome) -> list[tuple[str, str]]:
    """The tool results the model was given, as its final text says: ``(call id, result)``."""
    assert outcome.text is not None, f"the run did not finish: {outcome}"
    _, _, results = outcome.text.partition(" ")
    return [(i, r) for i, r in json.loads(results)]
