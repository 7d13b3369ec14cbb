"""Where a channel outside the server reads pending approvals and takes decisions: a signoff
server over its REST API (the decider is the token's principal), or a database straight through
the Python API (the decider is named by the app). Both speak the API's JSON, and both raise
`SignoffError` with a message a person can act on — `StaleDecisionError`, naming what changed,
for a decision sent on a version of the approval that changed since."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from signoff.errors import SignoffError, StaleDecisionError
from signoff.types import Decision, approval_to_dict, decision_to_dict

if TYPE_CHECKING:
    import httpx

    from signoff.policy import Policy, PolicyEngine
    from signoff.store import Store

__all__ = ["LocalStore", "Server", "Source", "approvals_so_far", "edited_by", "stale_error"]

T = TypeVar("T")


class Source(Protocol):
    """Pending approvals, whole approvals, a run's input, and decisions."""

    def pending(
        self, *, agent: str | None = None, tool: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """The pending approvals, newest first; long arguments may be cut (``truncated``)."""
        ...

    def approval(self, approval_id: str) -> dict[str, Any]:
        """One approval with its arguments whole."""
        ...

    def run_input(self, run_id: str) -> str | None:
        """What the person who started the run asked, when the run is one of signoff's."""
        ...

    def decide(
        self, approval_id: str, decision: Decision, *, version: int | None = None
    ) -> dict[str, Any]:
        """Take `decision`, made on `version` of the approval (the one shown: refused with
        `StaleDecisionError` when it changed since); the approval as it stands after it."""
        ...


@dataclass(frozen=True)
class Server:
    """A signoff server, reached over its REST API with a bearer token."""

    url: str
    token: str | None = field(default=None, repr=False)
    timeout: float = 30.0
    """Seconds to wait for one answer."""

    def pending(
        self, *, agent: str | None = None, tool: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"status": "pending", "limit": limit}
        params |= {k: v for k, v in (("agent", agent), ("tool", tool)) if v is not None}
        items: list[dict[str, Any]] = self._call("GET", "/v1/approvals", params=params)["items"]
        return items

    def approval(self, approval_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/approvals/{approval_id}")

    def run_input(self, run_id: str) -> str | None:
        try:
            run = self._call("GET", f"/v1/runs/{run_id}")
        except SignoffError:  # a framework's run, or one this token may not read
            return None
        return _first_user_message(run.get("messages") or [])

    def decide(
        self, approval_id: str, decision: Decision, *, version: int | None = None
    ) -> dict[str, Any]:
        path = f"/v1/approvals/{approval_id}/decision"
        body = decision_to_dict(decision) | ({} if version is None else {"version": version})
        return self._call("POST", path, json=body)

    def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        import httpx

        headers = {} if self.token is None else {"Authorization": f"Bearer {self.token}"}
        try:
            response = httpx.request(
                method,
                self.url.rstrip("/") + path,
                params=params,
                json=json,
                headers=headers,
                timeout=self.timeout,
            )
        except httpx.HTTPError as exc:
            raise SignoffError(f"cannot reach the signoff server at {self.url}: {exc}") from None
        return self._answer(response)

    def _answer(self, response: httpx.Response) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            body = {"detail": response.text[:200]}  # a proxy's page, not the API's answer
        if response.status_code == 200:
            answer: dict[str, Any] = body
            return answer
        detail = body.get("detail", body) if isinstance(body, dict) else body
        if response.status_code == 409 and isinstance(body, dict):
            stale = stale_error(body)
            if stale is not None:
                raise stale
        if response.status_code == 401:
            raise SignoffError(
                f"the signoff server at {self.url} refused the token (401: {detail}); "
                "give the token of a principal in its config"
            )
        raise SignoffError(f"the signoff server said {response.status_code}: {detail}")


@dataclass(frozen=True)
class LocalStore:
    """A signoff database, decided on through the Python API as `actor` with `roles` (as
    ``signoff inbox --database`` does). Each action opens the database and closes it again.

    An edit is checked against `schemas` (tool name to JSON schema) and re-checked by `policy`;
    without one, by the policy the database's servers saved last (none: an edit is checked
    against the arguments' limits only)."""

    url: str
    actor: str
    roles: Sequence[str] = ()
    policy: Policy | PolicyEngine | None = None
    schemas: Mapping[str, Mapping[str, Any]] | None = None

    def pending(
        self, *, agent: str | None = None, tool: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        async def read(store: Store) -> list[dict[str, Any]]:
            found = await store.list_approvals(
                status="pending", agent=agent, tool=tool, limit=limit
            )
            return [approval_to_dict(a) for a in found]

        return self._with_store(read)

    def approval(self, approval_id: str) -> dict[str, Any]:
        async def read(store: Store) -> dict[str, Any]:
            return approval_to_dict(await store.get_approval(approval_id))

        return self._with_store(read)

    def run_input(self, run_id: str) -> str | None:
        async def read(store: Store) -> str | None:
            if not await store.run_exists(run_id):
                return None
            return _first_user_message(await store.run_messages(run_id))

        return self._with_store(read)

    def decide(
        self, approval_id: str, decision: Decision, *, version: int | None = None
    ) -> dict[str, Any]:
        from signoff.gate import Gate

        async def decide(store: Store) -> dict[str, Any]:
            # The policy given here, else the one a server saved there last (and any it saves
            # while this decides), as the server would judge it.
            gate = (
                Gate(self.policy, store, schemas=self.schemas)
                if self.policy is not None
                else await Gate.following_saved(store, schemas=self.schemas)
            )
            approval = await gate.decide(
                approval_id, decision, actor=self.actor, roles=self.roles, version=version
            )
            return approval_to_dict(approval)

        return self._with_store(decide)

    def _with_store(self, action: Callable[[Store], Awaitable[T]]) -> T:
        from signoff.store import open_store

        async def run() -> T:
            async with open_store(self.url, migrate=False) as store:
                return await action(store)

        return asyncio.run(run())


def edited_by(item: dict[str, Any]) -> str | None:
    """Who edited the call of `item` (an approval as the API shows it) while it waited — one of
    several approvers — if anyone did: the last edit it keeps."""
    if not item.get("edited"):
        return None
    edits = [c for c in item.get("changes") or [] if c.get("kind") == "edit"]
    return str(edits[-1]["by"]) if edits else "someone"


def approvals_so_far(item: dict[str, Any]) -> str:
    """Who approved the call of `item` so far, of how many it needs: ``olga (1 of 2)``."""
    voters = [str(v["by"]) for v in item.get("votes") or []]
    count = (item.get("quorum") or {}).get("count", 1)
    return f"{', '.join(voters) or 'none yet'} ({len(voters)} of {count})"


def stale_error(body: dict[str, Any], *, message: str | None = None) -> StaleDecisionError | None:
    """The `StaleDecisionError` a server's 409 body reports, if it is one; its message the
    server's (naming what changed) unless `message` is given. Its changes stay in the body."""
    version = body.get("version")
    if body.get("error") != "StaleDecisionError" or not isinstance(version, int):
        return None
    seen = body.get("seen")
    return StaleDecisionError(
        message or str(body.get("detail") or "the approval changed since it was shown"),
        approval_id=str(body.get("approval_id") or ""),
        seen=seen if isinstance(seen, int) else None,
        version=version,
    )


def _first_user_message(messages: list[dict[str, Any]]) -> str | None:
    for message in messages:
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            content: str = message["content"]
            return content
    return None
