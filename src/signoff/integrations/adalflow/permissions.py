"""`SignoffPermissions`: AdalFlow's `PermissionManager` deciding with signoff's policy, approvals
and grants — a call waits in memory for its decision — and signoff's two hidden tools in the
runner's tool manager: `ANSWER`, signoff's answer in a call's place, and `RUN`, the call let
through, run once through signoff's ledger exactly as judged, approved or edited."""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any

from adalflow.apps.permission_manager import PermissionManager
from adalflow.core.func_tool import FunctionTool
from adalflow.core.tool_manager import ToolManager
from adalflow.core.types import Function, FunctionOutput, FunctionRequest
from pydantic_core import to_jsonable_python

from signoff.gate.answers import blocked_text
from signoff.gate.external import ExternalRuns
from signoff.gate.ids import new_id
from signoff.integrations._calls import Unrun, decided, run_once
from signoff.integrations.adalflow.outputs import as_output, note_edit, settled
from signoff.integrations.adalflow.schema import schema_of
from signoff.types import Approval, ToolCall

__all__ = ["ANSWER", "RUN", "SignoffPermissions"]

ANSWER = "signoff.answer"
"""The tool, known to the runner's tool manager but never shown to the model, that gives the
model signoff's answer to a call that does not run (a rejection's reason, a response)."""

RUN = "signoff.run"
"""The tool, known to the runner's tool manager but never shown to the model, that runs a call
signoff let through: the real tool, once, through signoff's ledger."""

Verdict = tuple[bool, Function | None, str | None]


class SignoffPermissions(PermissionManager):  # type: ignore[misc]
    """AdalFlow's `PermissionManager`, deciding with signoff's policy, approvals and grants."""

    def __init__(
        self,
        runs: ExternalRuns,
        *,
        agent: str | None = None,
        thread: str | None = None,
        requested_by: str | None = None,
        timeout: float | None = None,
    ) -> None:
        """`runs` from `connect(policy, origin="adalflow", database=...)`; `agent` the agent
        path the policy's ``agents:`` section judges the calls by; `thread` what the approvals
        are grouped by in the inbox (and a thread-scoped grant applies to; default: one of its
        own); `requested_by` who runs the agent (a rule may forbid them approving their own);
        `timeout` the seconds a call waits for a person at most (default: the rule's timeout,
        or no limit) before its approval expires."""
        super().__init__(approval_callback=None, approval_mode="default")
        self.runs = runs
        self.path = agent
        self.thread = thread or f"adalflow-{new_id()}"
        self.requested_by = requested_by
        self.timeout = timeout

    # -- AdalFlow's interface --------------------------------------------------------------

    def set_tool_manager(self, tool_manager: ToolManager) -> None:
        """The runner hands over its tool manager: signoff's answers and its execution of the
        calls it lets through become tools of it that the model is never shown, and its tools'
        schemas check edits."""
        super().set_tool_manager(tool_manager)
        tool_manager.context[ANSWER] = FunctionTool(_say)
        tool_manager.context[RUN] = _Run(self)
        for tool in tool_manager.tools:
            definition = getattr(tool, "definition", None)
            schema = schema_of(definition)
            if definition is not None and schema is not None:
                self.runs.gate.register_schemas({definition.func_name: schema}, agent=self.path)

    def is_approval_required(self, tool_name: str) -> bool:
        """Whether a call of the tool may wait for a person: what AdalFlow's stream announces
        with a permission request event. The call itself is judged with its arguments."""
        fixed = self.runs.gate.engine.fixed_kind(tool_name, agent=self.path)
        return fixed not in ("allow", "deny")

    async def check_permission(self, func: Function) -> Verdict:
        """Judge the call with its arguments; wait for a person where the policy asks. Returns
        AdalFlow's (allowed, function to run, response): signoff's `RUN` of the call (as
        proposed, or edited), or signoff's answer to a call that does not run."""
        if func.name in (ANSWER, RUN):  # signoff's to give, never the model's to call
            return self._answer(func, blocked_text("this tool is not the model's to call"))
        args = self._named_args(func)
        if args is None:
            return self._answer(func, blocked_text("its arguments do not fit the tool"))
        # What runs is what was judged: the arguments by name.
        func = Function(id=func.id, thought=func.thought, name=func.name, args=[], kwargs=args)
        proposed = ToolCall(id=func.id or new_id(), name=func.name, args=args, agent=self.path)
        # AdalFlow asks once per step of its in-memory run, and never asks again for the same
        # step (a stopped run is lost, not re-run): each check is a model response of its
        # own, so a model that gives every step's call the same id gets each one judged.
        step_of = functools.partial(self.runs.step_of, proposed, thread=self.thread, turn=new_id(),
                                    requested_by=self.requested_by,
                                    schema=self.runs.gate.tool_schema(proposed))  # fmt: skip
        step = await step_of()
        if step.kind == "wait":
            assert step.approval is not None  # a call waits on its approval
            request = FunctionRequest(id=proposed.id, tool_name=func.name, tool=func)
            self.pending_approvals[proposed.id] = _shown(request, step.approval)
            try:
                await self._wait(step.approval, request)
            finally:
                self.pending_approvals.pop(proposed.id, None)
            step = await step_of(resumed=True)  # as it was decided (or expired)
        if step.kind != "run":
            return self._answer(func, step.text)
        assert step.call is not None  # a call to run is named
        # The call travels to the execution as it is to run; `once` checks it there, so a
        # tool manager that changes it on the way gets it refused, not run.
        run = {"key": step.key, "call_id": proposed.id, "name": step.call.name,
               "args": dict(step.call.args), "edited": step.edited is not None}  # fmt: skip
        return True, Function(id=func.id, thought=func.thought, name=RUN, args=[], kwargs=run), None

    async def _execute(
        self, *, key: str, call_id: str, name: str, args: dict[str, Any], edited: bool
    ) -> FunctionOutput:
        """Run the tool `name` with `args` once under `key`, through signoff's ledger — refused
        unless it is the call judged allowed, approved or edited under `key` — and give the
        runner the tool's own output (with the edit noted); a call that does not run is
        answered."""
        assert self.tool_manager is not None  # the runner hands it over before any call
        context = self.tool_manager.context
        call = ToolCall(id=call_id, name=name, args=args, agent=self.path)
        ran: list[FunctionOutput] = []

        async def run() -> Any:
            output = await context[name].acall(**args)  # a missing tool fails as in AdalFlow
            recorded = None
            if isinstance(output, FunctionOutput):
                output.output, recorded = await settled(output.output)
            ran.append(output)
            if isinstance(output, FunctionOutput) and output.error is not None:
                raise _Failed(output.error)  # FunctionTool caught it: the ledger records it
            return {"output": to_jsonable_python(recorded, fallback=repr)}

        try:
            value = await run_once(self.runs, key, call, run)
        except _Failed:
            return ran[0]
        if isinstance(value, Unrun):
            return as_output(call, value.text)
        # A key is new for each check, so the tool ran here: its own output, not the record.
        output = ran[0] if ran else as_output(call, value["output"])
        if edited:
            note_edit(output, args)
        return output

    # -- the rest --------------------------------------------------------------------------

    def _named_args(self, func: Function) -> dict[str, Any] | None:
        """The call's arguments by the tool's parameter names — positional ones too, so that
        a rule on an argument sees it however the model passed it; None when they do not fit
        the tool's signature."""
        kwargs = dict(func.kwargs or {})
        if not func.args:
            return kwargs
        tool = self.tool_manager.get_function_tool_by_name(func.name) if self.tool_manager else None
        if tool is None:
            return None
        try:
            bound = inspect.signature(tool.fn).bind(*func.args, **kwargs)
        except (TypeError, ValueError):
            return None
        named: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            kind = bound.signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                return None  # a rule could not name them
            if kind is inspect.Parameter.VAR_KEYWORD:
                named.update(value)
            else:
                named[name] = value
        return named

    async def _wait(self, approval: Approval, request: FunctionRequest) -> Approval:
        """The approval once decided — or expired, after `timeout` seconds. Meanwhile the
        `request` in `pending_approvals` shows the call as it stands: each change to it (an
        edit, one approval of several) is a new version, listed anew."""

        def listed(found: Approval) -> None:
            self.pending_approvals[request.id] = _shown(request, found)

        return await decided(self.runs, approval, self.timeout, listed)

    @staticmethod
    def _answer(func: Function, text: str) -> Verdict:
        """Let the runner "run" signoff's answer in the call's place: the model reads it as
        the call's result (AdalFlow's own refusal would say only that it was cancelled)."""
        return True, Function(id=func.id, name=ANSWER, args=[], kwargs={"text": text}), text


def _shown(request: FunctionRequest, approval: Approval) -> FunctionRequest:
    """`request` showing the held call as it stands — its arguments as edited, if they were —
    with its signoff approval and version (``confirmation_details``, for the app to show)."""
    call, thought = approval.call, getattr(request.tool, "thought", None)
    request.tool = Function(id=request.id, thought=thought, name=call.name, args=[],
                            kwargs=dict(call.args))  # fmt: skip
    request.confirmation_details = {"signoff": {"approval": approval.id,
                                                "version": approval.version}}  # fmt: skip
    return request


def _say(text: str) -> str:
    """signoff's answer to a call that did not run as proposed."""
    return text


class _Run:
    """`RUN` in the tool manager's context, where AdalFlow looks a function's tool up: it
    returns the real tool's `FunctionOutput`, as the tool manager expects of a tool."""

    def __init__(self, permissions: SignoffPermissions) -> None:
        self.permissions = permissions

    def call(self, **kwargs: Any) -> FunctionOutput:
        # The synchronous runner's path: it waits for the decision the same way.
        return asyncio.run(self.permissions._execute(**kwargs))

    async def acall(self, **kwargs: Any) -> FunctionOutput:
        return await self.permissions._execute(**kwargs)


class _Failed(Exception):
    """The tool raised, and AdalFlow's `FunctionTool` turned it into its output's error."""
