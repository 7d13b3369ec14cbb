"""`ExternalRuns`, what a framework integration holds — its judging (`Verdicts`), its
promise (`Promise`: `step`, `claim`, `once`) and its pauses (`Pausing`) — with the decisions
that arrive the framework's way (a LangChain ``Command(resume=...)``), and `connect`, which
opens it all for a framework's synchronous or asynchronous code."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any

from signoff import telemetry
from signoff.errors import ConflictError, ForbiddenError, StaleDecisionError
from signoff.gate.bridge import Bridge
from signoff.gate.core import Gate, RolesOf, saved_policy
from signoff.gate.external.pausing import Pausing
from signoff.gate.external.promise import Promise
from signoff.gate.preview import PreviewFunction, Previews
from signoff.gate.questions import ASK_TOOL
from signoff.policy import Policy
from signoff.types import Approval, Decision

__all__ = ["ExternalRuns", "connect"]

logger = logging.getLogger("signoff.external")


class ExternalRuns(Promise, Pausing):
    """signoff's gate, ledger and pauses for the runs of one framework (`origin`)."""

    async def decide(
        self,
        decisions: Mapping[str, Decision],
        *,
        actor: str | None = None,
        roles: Iterable[str] | None = None,
        versions: Mapping[str, int] | None = None,
    ) -> dict[str, Approval]:
        """Take decisions that arrived through the framework (a resume payload) as `actor` when
        the framework says who sent them (with `roles`, default none), else as the
        integration's principal with its roles — each compare-and-set: one taken elsewhere
        first stands, and one this decider may not take (approvers, their own call) is not
        taken, nor one sent on a version of its approval (`versions`, as the payload names
        them) that changed since. With neither an actor nor a principal nothing is taken.
        Returns every approval as it stands."""
        decider: str | None = actor or self.principal
        if actor is not None:
            held_roles = frozenset(roles or ())
        else:
            held_roles = self.roles if roles is None else frozenset(roles)

        async def take() -> dict[str, Approval]:
            if decider is None:
                logger.warning(
                    "decisions sent through %s were not taken: it cannot tell who sent them; "
                    "decide in signoff, or name the principal such decisions are taken as "
                    "(connect(principal=...))",
                    self.origin,
                )
            else:
                for approval_id, decision in decisions.items():
                    version = (versions or {}).get(approval_id)
                    await self._take(approval_id, decision, decider, held_roles, version)
            found = await self.store.get_approvals(list(decisions))
            return {a.id: a for a in found}

        return await self.bridge.arun(take())

    async def _take(
        self,
        approval_id: str,
        decision: Decision,
        decider: str,
        roles: frozenset[str],
        version: int | None,
    ) -> None:
        """Take one decision sent through the framework, unless it may not be taken now."""
        try:
            with telemetry.channel("framework"):
                await self.gate.decide(
                    approval_id, decision, actor=decider, roles=roles, version=version
                )
        except (StaleDecisionError, ForbiddenError) as exc:
            logger.warning("a decision sent through %s was not taken: %s", self.origin, exc)
        except ConflictError:
            pass  # decided elsewhere first: that decision stands


def connect(
    policy: Any,
    *,
    origin: str,
    database: str | None = None,
    principal: str | None = None,
    roles: Iterable[str] = (),
    schemas: Any = None,
    roles_of: RolesOf | None = None,
    previews: Previews | Mapping[str, PreviewFunction] | None = None,
    follow_saved_policy: bool = False,
    questions: Iterable[str] = (ASK_TOOL,),
) -> ExternalRuns:
    """Open signoff for a framework's synchronous or asynchronous code: the store at
    `database` (or ``SIGNOFF_DATABASE_URL``, or ``signoff.db``) on a loop of its own, a gate over
    `policy` (a `Policy`, a `PolicyEngine`, or a policy file's path). `roles_of` says each
    principal's roles now (None: no longer one), so a grant is judged by its granter's roles
    at the moment it is used in this process too; without it, the roles stored with the grant
    stand. `previews` are the tools' preview functions by name (see `ExternalRuns`).
    `follow_saved_policy`: judge by the policy a `signoff serve` on the same database saved last
    (`PUT /v1/policy`), read before each approved call runs and whenever a newer one is found
    deciding — `policy` only until one is saved. `questions`: the names of the framework's
    tools that are the ask tool (``ask_person``, the kit's, unless named otherwise): their
    calls are questions, held for a person and answered, never run. `close()` it when done."""
    from signoff.store import open_store

    if isinstance(policy, str | os.PathLike):
        policy = Policy.from_file(str(policy))
    bridge = Bridge()
    opened = open_store(database)
    try:
        store = bridge.run(opened.__aenter__())
    except BaseException:
        bridge.close()
        raise
    gate = Gate(policy, store, schemas=schemas, roles_of=roles_of)
    if follow_saved_policy:
        gate.adopt_policy = saved_policy(gate)
    runs = ExternalRuns(
        gate,
        origin=origin,
        principal=principal,
        roles=roles,
        bridge=bridge,
        previews=previews,
        questions=questions,
    )
    runs._closers.append(lambda: opened.__aexit__(None, None, None))
    return runs
