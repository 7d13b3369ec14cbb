"""Agno: ``@tool(requires_confirmation=True)`` and ``acontinue_run``, the session in the agent's
``SqliteDb`` (`frameworks.agno_sides`)."""

from cases import Case
from frameworks import agno_sides

CASE = Case(name="Agno", build=agno_sides)
