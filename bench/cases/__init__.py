"""The frameworks `bench/overhead.py` measures, one case each: adding a framework is a module
here with a `CASE`, named in `CASES`.

A case builds one framework's `Sides` (`frameworks.Sides`) from the SDK's own store (`Kept`, a
SQLite file), signoff's runs that allow ``lookup`` and signoff's runs that ask about
``send_report``: the plain agent calling ``lookup``, the same agent through signoff, and —
where the framework has a durable approval path of its own — a held ``send_report`` paused and
resumed the framework's way and signoff's, on a thread of N messages written before. The tools
(`frameworks.lookup`, `frameworks.send_report`) note each real execution in `frameworks.RAN`,
and each step checks it ran once (`frameworks.check`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from frameworks import Kept, Sides
from signoff.gate.external import ExternalRuns

__all__ = ["CASES", "Build", "Case", "cases"]

Build = Callable[[Kept, ExternalRuns, ExternalRuns], Sides]
"""The SDK's store, signoff's runs that allow ``lookup``, and those that ask: the sides."""


@dataclass(frozen=True, kw_only=True)
class Case:
    name: str
    build: Build
    lacks: str | None = None
    """Why the framework has no durable approval path of its own to compare a held call with
    (its `Sides` then has no held steps); None when it has one."""
    unmeasured: str | None = None
    """Why the bench does not measure the framework's own held path although it has one (a
    case still to write); None when it does, or when the framework has none (`lacks`)."""
    last: bool = False
    """Run after every other case: it changes the process for those after it."""


CASES = (
    "pydantic_ai",
    "openai_agents",
    "google_adk",
    "agno",
    "langchain",
    "agent_framework",
    "strands",
    "llama_index",
    "crewai",
    "adalflow",
)
"""The modules of this package, each with its `CASE`."""


def cases() -> list[Case]:
    found = [importlib.import_module(f"cases.{name}").CASE for name in CASES]
    return sorted(found, key=lambda case: case.last)
