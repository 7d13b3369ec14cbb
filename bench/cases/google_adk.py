"""Google ADK: ``require_confirmation=True`` tools, the session in ADK's
``SqliteSessionService`` (`frameworks.adk_sides`)."""

from cases import Case
from frameworks import adk_sides

CASE = Case(name="Google ADK", build=adk_sides)
