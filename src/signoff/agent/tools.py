"""Python functions as tools: ``@tool`` reads the JSON schema from the type hints and the
description from the docstring, validates arguments before the call, and turns an exception into
an error result so the run goes on."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from signoff.agent.model import ToolSpec
from signoff.types import CallKind

__all__ = ["Tool", "ToolResult", "idempotency_key", "tool"]

_key: ContextVar[str | None] = ContextVar("signoff_idempotency_key", default=None)


def idempotency_key() -> str | None:
    """Inside a tool: the key of the call being run — the same on every attempt of that call, so
    an idempotent tool can hand it on (an ``Idempotency-Key`` header, a unique constraint)."""
    return _key.get()


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    """What a tool call gives back to the model."""

    content: str
    is_error: bool = False


class Tool:
    """A callable the agent may call; its calls go through the policy first."""

    kind: CallKind = "tool"
    """What the tool's calls are to the policy: a tool run, or a question to a person
    (`signoff.agent.asking`)."""
    available = True
    """Whether a call can be started now (an MCP server's tool is not once its server is
    closed): the runtime starts nothing it cannot run, so no approval is used up for nothing."""
    preview: Callable[..., Any] | None = None
    """Computes, without side effects, what a call would change (`signoff.gate.preview`):
    called with the call's validated arguments when the call is held."""

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        idempotent: bool = False,
        preview: Callable[..., Any] | None = None,
    ) -> None:
        self.function = function
        self.name = name or function.__name__
        self.description = (description or inspect.getdoc(function) or "").strip()
        self.idempotent = idempotent
        """Safe to run again after a crash left its outcome unknown (same key, same effect)."""
        self.preview = preview
        self.server: str | None = None
        """The MCP server the tool belongs to, for the policy's ``servers:`` sections."""
        self._arguments = _arguments_model(function, self.name)
        self.spec = ToolSpec(
            name=self.name,
            description=self.description,
            parameters=self._arguments.model_json_schema(),
        )

    async def invoke(self, args: dict[str, Any], *, key: str | None = None) -> ToolResult:
        """Validate `args`, call the function (sync ones in a thread of the loop's default
        executor, which previews never use) with `key` as its `idempotency_key()`, and report
        the outcome."""
        try:
            kwargs = self._validated(args)
        except ValueError as exc:
            return ToolResult(content=str(exc), is_error=True)
        token = _key.set(key)
        try:
            if inspect.iscoroutinefunction(self.function):
                result = await self.function(**kwargs)
            else:
                result = await asyncio.to_thread(self.function, **kwargs)
        except Exception as exc:  # a tool's failure is a result for the model, not a crash
            return ToolResult(content=_failure(self.name, exc), is_error=True)
        finally:
            _key.reset(token)
        return ToolResult(content=_as_text(result))

    def previewing(self) -> Callable[..., Any]:
        """`preview`, taking a call's arguments as the model gave them: validated as the tool's
        first (a call they do not fit has no preview but why). Synchronous when `preview` is,
        so that `signoff.gate.preview.Previews` runs it on the previews' own threads — never on
        those the tools run on, which a preview that hangs would otherwise keep."""
        preview = self.preview
        if preview is None:
            raise TypeError(f"tool {self.name!r} has no preview")
        if inspect.iscoroutinefunction(preview):

            async def awaited(**args: Any) -> Any:
                return await preview(**self._validated(args))

            return awaited

        def called(**args: Any) -> Any:
            return preview(**self._validated(args))

        return called

    def _validated(self, args: dict[str, Any]) -> dict[str, Any]:
        """`args` validated as the tool's, as keyword arguments; `ValueError` saying what does
        not fit."""
        try:
            validated = self._arguments.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            raise ValueError(f"invalid arguments for {self.name}: {problems}") from None
        return {name: getattr(validated, name) for name in type(validated).model_fields}

    def __repr__(self) -> str:
        return f"Tool({self.name!r}, idempotent={self.idempotent})"


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    preview: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    preview: Callable[..., Any] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a tool: ``@tool`` or ``@tool(idempotent=True, name=...)``. `preview`
    takes the tool's arguments and says, without side effects, what a call would change: it
    is shown with the call's approval when the call is held."""

    def wrap(target: Callable[..., Any]) -> Tool:
        return Tool(
            target, name=name, description=description, idempotent=idempotent, preview=preview
        )

    return wrap(function) if function is not None else wrap


def _arguments_model(function: Callable[..., Any], name: str) -> type[BaseModel]:
    try:
        hints = inspect.get_annotations(function, eval_str=True)
    except NameError as exc:
        raise TypeError(
            f"tool {name!r}: cannot resolve a type hint ({exc}); define the type where the "
            "function's module can see it"
        ) from None
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {name!r}: *args and **kwargs cannot be described to a model")
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def _failure(name: str, exc: Exception) -> str:
    """What the model reads of a tool's exception: the tool's own words, as its author wrote
    them (``There is no pod named 'nginx-123'.``). The exception's name is added only where the
    words alone say little: a ``KeyError``'s bare key, or no message at all."""
    message = str(exc).strip()
    if isinstance(exc, OSError) and exc.errno is not None:
        message = message.removeprefix(f"[Errno {exc.errno}] ")  # the number says nothing
    if not message:
        return f"{name} failed ({type(exc).__name__}, with no message)"
    if isinstance(exc, KeyError):
        return f"{name} failed: KeyError {message}"
    return message


def _as_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(result)
