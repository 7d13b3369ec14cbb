"""The OpenAI Agents SDK: ``needs_approval=True`` tools and a `RunState` kept in a table of the
SDK's SQLite file (`frameworks.openai_sides`)."""

from cases import Case
from frameworks import openai_sides

CASE = Case(name="OpenAI Agents SDK", build=openai_sides)
