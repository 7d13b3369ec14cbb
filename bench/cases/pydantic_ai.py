"""Pydantic AI: ``requires_approval=True`` tools and ``DeferredToolResults``, the history kept
in a table of the SDK's SQLite file (`frameworks.pydantic_sides`)."""

from cases import Case
from frameworks import pydantic_sides

CASE = Case(name="Pydantic AI", build=pydantic_sides)
