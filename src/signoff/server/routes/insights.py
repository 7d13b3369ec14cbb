"""``GET /v1/insights``: what the decisions of a window teach, and the policy changes they
suggest — which an admin applies with ``PUT /v1/policy`` like any other change. Authenticated
like every read."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query

from signoff.insights import DEFAULT_DAYS, MAX_DAYS, Candidate, Suggestion, gather, weigh
from signoff.server.auth import Who
from signoff.server.routes.depends import Served
from signoff.server.service import Service

__all__ = ["router"]

router = APIRouter()


@router.get("/v1/insights")
async def insights(
    who: Who, service: Served, days: Annotated[int, Query(ge=1, le=MAX_DAYS)] = DEFAULT_DAYS
) -> dict[str, Any]:
    """Per rule, tool and agent over the `days` before now: how many calls asked, with
    each status; the median and 90th percentile of the time to a person's decision; the
    top deciders; the calls grants let through. Then the suggestions, each a whole policy
    document to put with ``PUT /v1/policy`` (`can_apply`: the admin role, and a policy
    that was not given in code). Then the candidates nearest to a suggestion that were
    not offered, each bar with how far its calls got. Suggestions and candidates that
    would show a redacted argument are left out."""
    now = datetime.now(UTC)
    found = await gather(service.store, days=days, now=now)
    document = service.policy_document
    suggestions: tuple[Suggestion, ...] = ()
    nearest: tuple[Candidate, ...] = ()
    if document is not None:
        weighed = await weigh(
            service.store, service.gate.engine, document,
            days=days, now=now, groups=found.groups,
            shown=lambda candidate: not _shows_hidden(service, candidate),
        )  # fmt: skip
        suggestions, nearest = weighed.suggestions, weighed.nearest
    return {
        **found.to_json(),
        "policy_version": service.gate.engine.version,
        "suggestions": [s.to_json() for s in suggestions if not _reveals(service, s)],
        "nearest": [c.to_json() for c in nearest],
        "can_apply": document is not None and "admin" in who.roles,
    }


def _reveals(service: Service, suggestion: Suggestion) -> bool:
    when = suggestion.rule.get("when", {})
    return any(service.redaction.hidden((key,)) for key in when)


def _shows_hidden(service: Service, candidate: Candidate) -> bool:
    return candidate.argument is not None and service.redaction.hidden((candidate.argument,))
