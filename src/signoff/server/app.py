"""The HTTP API of ARCHITECTURE §7: runs, their events (SSE), approvals and decisions, audit.

Every error is JSON naming the problem — 400, 401, 403, 404, 409 or 422 — never a 500 for bad
input. The decider of a decision is the authenticated principal.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

from fastapi import FastAPI, Header, HTTPException, Query, Request, Response, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from signoff.agent import Agent
from signoff.errors import (
    ApprovalTimeout,
    ConflictError,
    ForbiddenError,
    InvalidDecisionError,
    InvalidEditError,
    NotFoundError,
    PolicyError,
    SignoffError,
    StaleDecisionError,
    StoreUnavailableError,
)
from signoff.gate.transcript import bounded
from signoff.names import same_person
from signoff.redaction import Redaction
from signoff.server.auth import Auth, Who
from signoff.server.catalog import mount_catalog
from signoff.server.changes import mount_changes
from signoff.server.guards import KnownHost, NoNul, SameOrigin
from signoff.server.insights import mount_insights
from signoff.server.intake import BodyLimits, Intake, validation_refusal
from signoff.server.metrics import install_metrics
from signoff.server.probes import mount_probes
from signoff.server.quick import QuickDecision
from signoff.server.service import Principal, Service
from signoff.server.shapes import (
    AssignBody,
    DecisionBody,
    Decisions,
    ExplainBody,
    ExplainContext,
    PolicyBody,
    PreviewBody,
    StartRun,
    ToggleBody,
    approval_json,
    cut_input,
    event_json,
    grant_json,
    iso,
    previewed,
    seen_version,
    shown,
    sse,
    stale_json,
    verdict_json,
)
from signoff.server.slack import INTERACTIONS, mount_slack
from signoff.server.sso.routes import install_sign_on
from signoff.server.threads import mount_threads
from signoff.server.web import mount_web
from signoff.server.ws import websocket_channel
from signoff.store.checkpoint import Checkpoint, audit_key
from signoff.store.runs import RunRecord
from signoff.store.times import from_micros, to_micros
from signoff.types import Approval, Context, Grant, ToolCall, preview_to_dict

__all__ = ["create_app"]

EARLIER_RUNS = 20
"""The most runs of a thread before it a run's page shows."""
EARLIER_BYTES = 256 * 1024
"""The most those runs' messages take as JSON: the runs farthest back are left out past it."""
ASKED_KEPT = 10_000
"""Runs whose first message the API keeps in memory, to show with their approvals."""

T = TypeVar("T")

_MAX_SEQ = 2**62
"""The largest sequence number a request may name: the databases' integers stop at 2**63."""
logger = logging.getLogger(__name__)
_PHRASES = {401: "Unauthorized", 404: "NotFound", 405: "MethodNotAllowed"}
_DIGESTS = frozenset({"digest", "decided_digest", "args_digest"})
"""Audit data that hashes a call's arguments."""


def create_app(service: Service, auth: Auth, *, limits: BodyLimits | None = None) -> FastAPI:
    """The API over `service`; its workers run for the app's lifetime. Request bodies are held
    to `limits` (size and nesting), and read only once the token is known."""

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with service.running():
            yield

    # No /docs or /redoc: their pages load from a CDN, blank offline. /openapi.json stays.
    app = FastAPI(
        title="signoff", version=_version(), lifespan=lifespan, docs_url=None, redoc_url=None
    )
    redaction = service.redaction

    def show(data: T) -> T:  # whole: cut where it nests too deep, arguments masked
        return shown(data, redaction)

    def brief(data: dict[str, Any]) -> dict[str, Any]:  # in a listing: long arguments cut
        return previewed(data, redaction)

    asked: dict[str, str] = {}
    """What the user asked each run, as read: a run's first message never changes, so each is
    read once, not again at every decision of its calls (the newest `ASKED_KEPT` kept)."""

    async def approvals_json(approvals: Sequence[Approval]) -> list[dict[str, Any]]:
        """The approvals with what the user asked their runs, read at once for all of them,
        and the JSON schema kept with each (`args_schema`: an edit is checked against it, the
        inbox's edit form is built from it), or null."""
        wanted = {a.run_id for a in approvals if a.run_id}
        unread = wanted - asked.keys()
        if unread:
            asked.update(await service.store.run_inputs(unread))
            for run_id in list(asked)[: max(0, len(asked) - ASKED_KEPT)]:
                del asked[run_id]  # the oldest read first
        inputs = {run_id: asked[run_id] for run_id in wanted if run_id in asked}
        return [
            approval_json(a, inputs)
            | {"args_schema": a.args_schema, "preview_edits": service.previews_for(a) is not None}
            for a in approvals
        ]

    async def take(
        who: Principal, approval_id: str, body: DecisionBody, if_match: str | None = None
    ) -> dict[str, Any]:
        """A decision on one approval, as `POST /v1/approvals/{id}/decision` takes it: on the
        version its body or its ``If-Match`` names."""
        approval = await service.decide(
            approval_id,
            body.decision(),
            actor=who.name,
            roles=who.roles,
            version=seen_version(body.version, if_match),
        )
        [shown_approval] = await approvals_json([approval])
        return show(shown_approval)

    app.state.auth = auth
    if service.gate.roles_of is None:
        # Grants are judged by their granters' roles as this server's tokens give them now:
        # a token removed or a role taken away in the config takes the grant's power with it.
        service.gate.roles_of = auth.roles_of
        service.gate.principals_from = auth.principals_from
    _errors(app, redaction)
    app.add_middleware(QuickDecision, auth=auth, take=take)  # inside Intake: after its checks
    # A Slack interaction is authenticated by its signature, which its route checks.
    signed = frozenset({INTERACTIONS}) if service.notifications is not None else frozenset()
    app.add_middleware(Intake, auth=auth, limits=limits or BodyLimits(), signed=signed)
    app.add_middleware(NoNul)
    install_sign_on(app, auth)  # with sign-on: /auth/*, and the cookie's guard outside Intake
    if auth.anonymous is not None:
        app.add_middleware(SameOrigin, auth=auth)
    if auth.checks_hosts:
        app.add_middleware(KnownHost, auth=auth)  # outermost: before anything else is read

    mount_probes(app, service.store)
    mount_web(app)
    mount_changes(app, service)  # before /v1/approvals/{id}: its path is no id
    mount_catalog(app, service)  # the same
    mount_threads(app, service, show)
    mount_insights(app, service)
    if service.notifications is not None:
        mount_slack(app, service, service.notifications, auth.roles_of)

    @app.get("/v1/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/me")
    async def me(who: Who) -> dict[str, Any]:
        """Who the request is, with which roles; `authenticated` is false without tokens."""
        return {
            "name": who.name,
            "roles": sorted(who.roles),
            "authenticated": auth.anonymous is None,
        }

    @app.get("/v1/web")
    async def web(_: Who) -> dict[str, Any]:
        """What the web inbox takes from the server's config: how many seconds it holds an
        approval or a rejection back, undoable, before sending it (0: none)."""
        return {"undo_seconds": service.undo_seconds}

    @app.get("/v1/agents")
    async def agents(_: Who) -> dict[str, Any]:
        """Every agent that runs here, with its model, its tools (their argument schemas and
        the verdict a call with no arguments gets) and its sub-agents, each by path."""
        return {"items": [_agent_json(service, agent, agent.name) for agent in service.agents]}

    @app.post("/v1/threads/{thread_id}/runs", status_code=201)
    async def start_run(
        thread_id: str,
        body: StartRun,
        who: Who,
        wait: Annotated[float, Query(ge=0, le=60)] = 0,
    ) -> dict[str, Any]:
        """Start a run of `agent` on the thread; with `wait`, answer once it pauses or ends
        (or after that many seconds)."""
        run_id = await service.start_run(
            body.agent, thread_id, body.input, started_by=who.name, wait=wait
        )
        return await _run(service, run_id, earlier=False)

    @app.get("/v1/runs")
    async def list_runs(
        _: Who,
        agent: str | None = None,
        status: str | None = None,
        cursor: str | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> dict[str, Any]:
        """Runs, newest first, without their messages but with what each was asked (`input`:
        its first message, cut); `next` is the next page's cursor."""
        if cursor is not None:
            await service.store.get_run(cursor)  # 404 for a cursor that names no run
        page = await service.store.list_runs(agent=agent, status=status, before=cursor, limit=limit)
        inputs = await service.store.run_inputs([r.id for r in page])
        return {
            "items": [_run_summary(r) | {"input": cut_input(inputs.get(r.id))} for r in page],
            "next": page[-1].id if len(page) == limit else None,
        }

    @app.get("/v1/runs/{run_id}")
    async def get_run(run_id: str, _: Who) -> dict[str, Any]:
        return await _run(service, run_id)

    @app.get("/v1/runs/{run_id}/events")
    async def run_events(
        run_id: str,
        _: Who,
        request: Request,
        last_event_id: Annotated[int | None, Header(ge=0, le=_MAX_SEQ)] = None,
        after: Annotated[int, Query(ge=0, le=_MAX_SEQ)] = 0,
    ) -> StreamingResponse:
        """The run's events as server-sent events, from the start or after `Last-Event-ID`,
        live until the run ends."""
        await service.store.get_run(run_id)  # 404 before the stream starts
        events = service.follow(run_id, after=last_event_id or after)

        async def stream() -> AsyncIterator[str]:
            async for event in events:
                yield sse(brief(event_json(event)), event.type, str(event.seq))

        # Ended once who opened it may no longer read it (signed out, on any replica).
        watched = auth.while_signed_in(request.headers, stream())
        return StreamingResponse(watched, media_type="text/event-stream")

    @app.get("/v1/events")
    async def all_events(
        _: Who,
        request: Request,
        last_event_id: Annotated[str | None, Header(max_length=200)] = None,
        since: datetime | None = None,
    ) -> StreamingResponse:
        """Every run's events as server-sent events, live: from now on, from `since`, or after
        `Last-Event-ID` (an id of this stream: ``<micros>.<run id>.<number>``). For inboxes."""
        after = None
        if last_event_id is not None:
            try:
                micros, run_id, seq = last_event_id.split(".")
                after = (from_micros(int(micros)), run_id, int(seq))
                since = after[0]
            except (ValueError, OverflowError, OSError):
                detail = f"Last-Event-ID {last_event_id!r} is not an id of this stream"
                raise HTTPException(
                    400, detail={"error": "InvalidRequest", "detail": detail}
                ) from None
        if since is not None and since.tzinfo is None:
            since = since.replace(tzinfo=UTC)  # a time without a zone is UTC
        events = service.follow_all(since=since, after=after)

        async def stream() -> AsyncIterator[str]:
            yield ": every run's events\n\n"  # the stream is open before the first event
            async for event in events:
                event_id = f"{to_micros(event.at)}.{event.run_id}.{event.seq}"
                yield sse(brief(event_json(event)), event.type, event_id)

        watched = auth.while_signed_in(request.headers, stream())
        return StreamingResponse(watched, media_type="text/event-stream")

    @app.get("/v1/approvals")
    async def list_approvals(
        who: Who,
        status: str | None = None,
        run_id: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        cursor: str | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
        short_id: Annotated[str | None, Query(min_length=1)] = None,
        assigned: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    ) -> dict[str, Any]:
        """Newest first; `next` is the cursor of the next page, or null. Long arguments are
        cut (``truncated``); `GET /v1/approvals/{id}` has them whole. With `short_id`, only
        the approvals whose id ends with it (the short id `signoff inbox` shows), on one page.
        With `assigned`, those handed to that principal or ``role:NAME``; ``assigned=me``:
        to the caller, or to a role the caller has."""
        if short_id is not None:
            if (status, run_id, agent, tool, cursor, assigned) != (None,) * 6:
                raise HTTPException(
                    400, detail={"error": "InvalidRequest", "detail": "short_id goes alone"}
                )
            found = await service.store.find_approvals(short_id, limit=limit)
            return {"items": [brief(a) for a in await approvals_json(found)], "next": None}
        assigned_to = None
        if assigned == "me":
            assigned_to = [who.name, *(f"role:{r}" for r in sorted(who.roles))]
        elif assigned is not None:
            assigned_to = [assigned]
        page = await service.store.list_approvals(
            status=status,
            run_id=run_id,
            agent=agent,
            tool=tool,
            assigned_to=assigned_to,
            before=cursor,
            limit=limit,
        )
        return {
            "items": [brief(a) for a in await approvals_json(page)],
            "next": page[-1].id if len(page) == limit else None,
        }

    @app.get("/v1/approvals/{approval_id}")
    async def get_approval(
        approval_id: str,
        _: Who,
        response: Response,
        wait: Annotated[float, Query(ge=0, le=300)] = 0,
        version: Annotated[int | None, Query(ge=1, le=2**31)] = None,
    ) -> dict[str, Any]:
        """The approval; with `wait`, once it is decided (with `version`, once it is no longer
        at that version: edited, voted on, handed on, escalated) or that many seconds have
        passed. Its ``ETag`` is its version: send it back as ``If-Match`` with a decision."""
        approval = await service.store.get_approval(approval_id)
        if approval.pending and wait > 0 and version in (None, approval.version):
            with contextlib.suppress(ApprovalTimeout):
                approval = await service.gate.wait(approval_id, timeout=wait, past=version)
        response.headers["ETag"] = f'"{approval.version}"'
        [shown_approval] = await approvals_json([approval])
        return show(shown_approval)

    @app.post("/v1/approvals/{approval_id}/decision")
    async def decide(
        approval_id: str,
        body: DecisionBody,
        who: Who,
        if_match: Annotated[str | None, Header(max_length=64)] = None,
    ) -> dict[str, Any]:
        """Decide the approval, on the version its sender saw (``version``, or ``If-Match``):
        one that changed since gets 409 naming what changed, and nothing is written."""
        # A well-formed decision seldom gets here: `QuickDecision` takes it to `take` first.
        return await take(who, approval_id, body, if_match)

    @app.post("/v1/approvals/{approval_id}/assign")
    async def assign(approval_id: str, body: AssignBody, who: Who) -> dict[str, Any]:
        """Hand a pending approval to a person or a role (``role:NAME``) with a note, as
        someone who may decide it; it is told through the sinks that reach them, audited, and
        widens nothing: they are held to the rule's approvers like anyone."""
        approval = await service.gate.assign(
            approval_id, body.to, actor=who.name, roles=who.roles, note=body.note
        )
        [shown_approval] = await approvals_json([approval])
        return show(shown_approval)

    @app.post("/v1/approvals/{approval_id}/preview")
    async def preview(approval_id: str, body: PreviewBody, who: Who) -> dict[str, Any]:
        """What the pending call would change with `args` in place of its own — an edit not
        sent yet — computed here, within the preview's bounds; 409 where its tool lives in
        another process (``preview_edits`` false on the approval)."""
        found = await service.preview_edit(approval_id, body.args, actor=who.name, roles=who.roles)
        return {"preview": show(preview_to_dict(found))}

    @app.post("/v1/approvals/decisions")
    async def decide_batch(body: Decisions, who: Who) -> dict[str, Any]:
        """Several decisions, all or nothing ("Approve All" is every id with approve), each on
        the version of its approval it names."""
        decisions = {i: d.decision() for i, d in body.decisions.items()}
        versions = {i: d.version for i, d in body.decisions.items() if d.version is not None}
        decided = await service.decide_batch(
            decisions, actor=who.name, roles=who.roles, versions=versions
        )
        return {"items": [show(a) for a in await approvals_json(decided)]}

    @app.get("/v1/policy")
    async def policy(_: Who) -> dict[str, Any]:
        """The policy in force: its version, default and rules as a file would write them, and
        the document it was written as (null when it was given in code: not editable)."""
        return _policy(service)

    @app.put("/v1/policy")
    async def put_policy(body: PolicyBody, who: Who) -> dict[str, Any]:
        """Put a new policy in force (the admin role): a new version, audited, on every
        replica. A document with mistakes gets 422 listing each of them; one made from a
        `version` that another change replaced since, 409."""
        _admin(who)
        async with service.policy_lock:
            await service.set_policy(body.document, actor=who.name, replaces=body.version)
        return _policy(service)

    @app.put("/v1/policy/tools/{tool}")
    async def toggle(
        tool: str, body: ToggleBody, who: Who, agent: str | None = None
    ) -> dict[str, Any]:
        """Allow, ask or deny one tool ("Require approval?"): the ``tools:`` toggle for it —
        of the agent's section with `agent`, else of the whole policy — as a new policy
        version (the admin role). Rules that name the tool still apply as the policy's
        precedence says; `POST /v1/policy/explain` shows the outcome."""
        _admin(who)
        if agent is not None and agent not in _paths(service.agents):
            raise NotFoundError(f"no agent {agent!r}; the agents are {_paths(service.agents)}")
        async with service.policy_lock:  # two switches at once: both changes are kept
            current = service.gate.engine.version
            if body.version is not None and body.version != current:
                raise ConflictError(
                    f"the policy changed (version {current}, not {body.version}): reload it"
                )
            if service.policy_document is None:
                raise ConflictError("this server's policy was given in code: it cannot be edited")
            document = json.loads(json.dumps(service.policy_document))  # a copy to change
            section = document
            if agent is not None:
                section = _section(_section(document, "agents"), agent)
            _toggle(_section(section, "tools"), tool, body.verdict)
            # Saved only if no replica saved another version since this one's copy was made.
            await service.set_policy(document, actor=who.name, replaces=current)
        return _policy(service)

    @app.post("/v1/policy/explain")
    async def explain(body: ExplainBody, _: Who) -> dict[str, Any]:
        """The verdict a call would get, the rule that decides it and the rules it shadows;
        the grant that would let it through (for the call's `context`), and why each other
        grant of its tool would not."""
        call = ToolCall(
            id="", name=body.tool, args=body.args, server=body.server, agent=body.agent,
            kind=body.kind,
        )  # fmt: skip
        where = body.context or ExplainContext()
        stored = await service.store.list_grants(tool=body.tool)
        current = [service.gate.grant_now(g) for g in stored]
        context = Context(
            run_id=where.run_id,
            thread_id=where.thread_id,
            requested_by=where.requested_by,
            grants=tuple(g for g in current if g is not None),
        )
        explanation = service.gate.engine.explain(call, context, limits=service.gate.limits)
        weighed = explanation.grants_json()
        weighed["grants_passed_over"] += [
            {"id": g.id, "granted_by": g.created_by, "scope": g.scope,
             "why": service.gate.grant_inactive(g)}
            for g, now in zip(stored, current, strict=True)
            if now is None
        ]  # fmt: skip
        return (
            verdict_json(explanation.verdict)
            | {"shadowed": [rule.id for rule in explanation.shadowed]}
            | weighed
        )

    @app.get("/v1/grants")
    async def grants(_: Who, tool: str | None = None, revoked: bool = False) -> dict[str, Any]:
        """Every grant in force, oldest first (with `revoked`, the revoked ones too): its
        scope, tool, argument binding, who granted it and when, how often it was used, and
        whether it is in force: ``stale`` once the rule it was given under is no longer the
        policy's, ``inactive`` once its granter is no longer one of this server's principals
        or no longer has a role its rule needs (``why`` says which) — either covers nothing."""
        found = await service.store.list_grants(tool=tool, revoked=revoked)
        return {"items": await _grants_json(service, found)}

    @app.get("/v1/grants/{grant_id}")
    async def grant(grant_id: str, _: Who) -> dict[str, Any]:
        [shown_grant] = await _grants_json(service, [await service.store.get_grant(grant_id)])
        return shown_grant

    @app.delete("/v1/grants/{grant_id}")
    async def revoke(grant_id: str, who: Who) -> dict[str, Any]:
        """Revoke a grant (its granter, or the admin role): no call passes under it once this
        answers. Audited."""
        found = await service.store.get_grant(grant_id)
        if not same_person(found.created_by, who.name) and "admin" not in who.roles:
            raise ForbiddenError(
                f"{who.name!r} may not revoke {found.created_by!r}'s grant: it needs the admin role"
            )
        if found.revoked_at is None:
            # Revoked meanwhile by another request: done all the same (a DELETE sent again,
            # after an answer that was lost, is answered as the first was).
            with contextlib.suppress(NotFoundError):
                await service.gate.revoke_grant(grant_id, actor=who.name)
        [revoked_grant] = await _grants_json(service, [await service.store.get_grant(grant_id)])
        return revoked_grant

    @app.websocket("/v1/ws")
    async def ws(socket: WebSocket) -> None:
        """Approval requests and decisions pushed live; decisions taken (see `server.ws`)."""
        await websocket_channel(socket, service, auth, limits=limits or BodyLimits())

    @app.get("/v1/audit")
    async def audit(
        _: Who,
        after: Annotated[int, Query(ge=0, le=_MAX_SEQ)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> dict[str, Any]:
        """Entries in order after `after`; `length` is the log's. With redaction configured,
        the calls' digests and the entries' hashes are left out: they are hashes of the
        arguments, and a guessable secret could be found from them. A damaged entry comes with
        `problem` saying what is wrong, and whatever of it cannot be shown left out."""
        entries = await service.store.audit_log(after=after, limit=limit)
        hide = bool(service.redaction)
        return {
            "length": await service.store.audit_length(),
            "items": [
                {
                    "seq": e.seq,
                    "at": None if e.at is None else iso(e.at),
                    "actor": e.actor,
                    "action": e.action,
                    "subject": e.subject,
                    "data": {
                        k: v for k, v in show(e.data).items() if not hide or k not in _DIGESTS
                    },
                    "hash": None if hide else e.hash,
                    "problem": e.problem,
                }
                for e in entries
            ],
            "next": entries[-1].seq if len(entries) == limit else None,
        }

    @app.get("/v1/audit/verify")
    async def verify(_: Who, since: str | None = None) -> dict[str, Any]:
        """Check the chain; with `since` (a checkpoint from ``signoff audit checkpoint``,
        signed with this server's ``SIGNOFF_AUDIT_KEY``) also that no entry up to it was
        removed or rewritten. A checkpoint that is not one, or is forged, is a 400."""
        checkpoint = None
        if since is not None:
            checkpoint = Checkpoint.parse(since)
            checkpoint.check(audit_key())
        report = await service.store.verify_audit(since=checkpoint)
        return {
            "ok": report.ok,
            "entries": report.entries,
            "first_bad_entry": report.first_bad,
            "reason": report.reason,
            "checkpoint": None
            if checkpoint is None
            else {"entries": checkpoint.seq, "at": iso(checkpoint.at), "signed": checkpoint.signed},
        }

    _mount_protocols(app, service, auth)  # after /v1: its routes are matched first
    install_metrics(app, service)  # GET /metrics; each request in its caller's trace
    return app


_PROTOCOLS = (
    # name, module and its mount function, the packages its extra installs, the extra
    ("A2A", "signoff.protocols.a2a", "mount_a2a", ("a2a", "google"), "a2a"),
    ("AG-UI", "signoff.protocols.agui", "mount_agui", ("ag_ui", "jsonpatch"), "ag-ui"),
)


def _mount_protocols(app: FastAPI, service: Service, auth: Auth) -> None:
    """Serve the agents over A2A and AG-UI too, each when its extra is installed."""
    for name, module, function, packages, extra in _PROTOCOLS:
        try:
            mount = getattr(importlib.import_module(module), function)
        except ImportError as exc:
            if exc.name is None or not exc.name.startswith(packages):
                raise
            logger.info("%s is not served: install it with pip install 'signoff[%s]'", name, extra)
            continue
        mount(app, service, auth)


async def _grants_json(service: Service, grants: Sequence[Grant]) -> list[dict[str, Any]]:
    """The grants as the API lists them, each narrowed to arguments with those arguments (as
    the approval that left it was decided; shown as every call's are)."""
    engine = service.gate.engine
    bound = [g.approval_id for g in grants if g.args_digest is not None and g.approval_id]
    approvals = {a.id: a for a in await service.store.get_approvals(bound)} if bound else {}
    items = []
    for g in grants:
        item = grant_json(
            g, in_force=engine.knows(g.rule_digest), inactive=service.gate.grant_inactive(g)
        )
        approval = approvals.get(g.approval_id or "")
        item["args"] = None if approval is None else approval.call.args
        items.append(shown(item, service.redaction))
    return items


def _agent_json(service: Service, agent: Agent, path: str) -> dict[str, Any]:
    engine = service.gate.engine
    model = agent.model
    return {
        "name": agent.name,
        "path": path,
        "description": agent.description,
        "model": getattr(model, "label", None) or type(model).__name__,
        "tools": [
            {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
                "verdict": verdict_json(
                    engine.evaluate(ToolCall(id="", name=spec.name, args={}, agent=path))
                ),
            }
            for spec in agent.specs
        ],
        "subagents": [_agent_json(service, a, f"{path}/{a.name}") for a in agent.subagents],
    }


def _paths(agents: Sequence[Agent], parent: str = "") -> list[str]:
    """The path of every agent in the trees."""
    found = []
    for agent in agents:
        path = f"{parent}{agent.name}"
        found += [path, *_paths(agent.subagents, f"{path}/")]
    return found


def _section(document: dict[str, Any], key: str) -> dict[str, Any]:
    """The mapping under `key`, made when missing; 409 when it is something else."""
    section = document.setdefault(key, {})
    if not isinstance(section, dict):
        raise ConflictError(f"the policy's {key!r} section is not a mapping")
    return section


def _toggle(tools: dict[str, Any], tool: str, verdict: str) -> None:
    """Set the tool's toggle to `verdict`, keeping what else it says (a timeout, approvers)."""
    toggle = tools.get(tool)
    kept = (
        {k: v for k, v in toggle.items() if k not in ("verdict", "require_approval")}
        if isinstance(toggle, dict)
        else {}
    )
    tools[tool] = {"verdict": verdict, **kept}


def _admin(who: Principal) -> None:
    if "admin" not in who.roles:
        raise ForbiddenError(f"{who.name!r} may not change the policy: it needs the admin role")


def _policy(service: Service) -> dict[str, Any]:
    current = service.gate.engine.policy
    return {
        "version": current.version,
        "source": current.source,
        "default": current.default,
        "rules": [rule.to_dict() for rule in current.rules],
        "document": service.policy_document,
    }


def _errors(app: FastAPI, redaction: Redaction) -> None:
    statuses: Mapping[type[SignoffError], int] = {
        StoreUnavailableError: 503,
        NotFoundError: 404,
        PolicyError: 422,
        ConflictError: 409,
        ForbiddenError: 403,
        InvalidEditError: 422,
        InvalidDecisionError: 422,
    }

    @app.exception_handler(SignoffError)
    async def signoff_error(request: Request, exc: SignoffError) -> JSONResponse:
        status = next((s for kind, s in statuses.items() if isinstance(exc, kind)), 400)
        body: dict[str, Any] = {"error": type(exc).__name__, "detail": str(exc)}
        if isinstance(exc, InvalidEditError):
            body |= {"path": exc.path, "schema_path": exc.schema_path}
        if isinstance(exc, PolicyError):
            body["problems"] = [{"path": p.path, "problem": p.message} for p in exc.problems]
        if isinstance(exc, StaleDecisionError):
            body |= stale_json(exc, redaction)
        if isinstance(exc, StoreUnavailableError):  # what it was is for the server's log
            logger.warning("%s %s: %s", request.method, request.url.path, exc)
            body["detail"] = "the database cannot be reached now: try again"
            return JSONResponse(body, status_code=status, headers={"Retry-After": "1"})
        return JSONResponse(body, status_code=status)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail: Any = exc.detail  # ours are dicts already; Starlette's own are words
        body = detail if isinstance(detail, dict) else {"error": "", "detail": str(detail)}
        body["error"] = body["error"] or _PHRASES.get(exc.status_code, "Error")
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        status, body = validation_refusal(exc.errors(), exc.body)
        return JSONResponse(body, status_code=status)


async def _run(service: Service, run_id: str, *, earlier: bool = True) -> dict[str, Any]:
    """The run with its messages, and — for a run that continues a conversation — the runs
    of its thread before it (`earlier`, oldest first, each with its newest messages, texts
    cut: `EARLIER_RUNS` runs at most, `EARLIER_BYTES` of messages in all)."""
    store = service.store
    record = await store.get_run(run_id)
    pending = await store.list_approvals(status="pending", run_id=run_id, limit=500)
    before: list[dict[str, Any]] = []
    if earlier and record.parent_id is None:
        found = await store.list_runs(thread_id=record.thread_id, roots=True, before=run_id,
                                      limit=EARLIER_RUNS)  # fmt: skip
        size = 0
        for run in found:  # newest first: the runs nearest this one are kept
            messages = bounded(shown(await store.run_messages(run.id), service.redaction))
            size += len(json.dumps(messages, default=str))
            if size > EARLIER_BYTES:
                break
            before.append(_run_summary(run) | {"messages": messages})
    return _run_summary(record) | {
        "messages": shown(await store.run_messages(run_id), service.redaction),
        "pending_approvals": [a.id for a in pending],
        "earlier": before[::-1],
    }


def _run_summary(record: RunRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "thread_id": record.thread_id,
        "agent": record.agent,
        "status": record.status,
        "started_by": record.started_by,
        "parent_id": record.parent_id,
        "created_at": None if record.created_at is None else iso(record.created_at),
        "updated_at": None if record.updated_at is None else iso(record.updated_at),
    }


def _version() -> str:
    import signoff

    return signoff.__version__
