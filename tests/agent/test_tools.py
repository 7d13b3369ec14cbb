"""``@tool``: schemas from type hints, validation before the call, failures as results."""

from __future__ import annotations

import asyncio
import threading
from typing import Literal

import pytest
from pydantic import BaseModel

from signoff.agent import Tool, ToolResult, tool


@tool
def delete_pod(name: str, namespace: str = "default", grace_seconds: int = 30) -> str:
    """Delete a pod by name."""
    return f"deleted {namespace}/{name} after {grace_seconds}s"


@tool(idempotent=True, name="scale")
async def scale_deployment(
    name: str, replicas: int, mode: Literal["fast", "safe"] = "safe"
) -> dict[str, object]:
    """Scale a deployment.

    Waits for the rollout in safe mode.
    """
    await asyncio.sleep(0)
    return {"name": name, "replicas": replicas, "mode": mode}


def test_the_schema_comes_from_the_type_hints_and_the_description_from_the_docstring():
    assert delete_pod.name == "delete_pod"
    assert delete_pod.description == "Delete a pod by name."
    schema = delete_pod.spec.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["name"]
    assert schema["properties"]["name"]["type"] == "string"
    assert schema["properties"]["grace_seconds"] == {
        "default": 30,
        "title": "Grace Seconds",
        "type": "integer",
    }
    assert schema["additionalProperties"] is False
    assert scale_deployment.name == "scale"
    assert scale_deployment.idempotent is True
    assert (
        scale_deployment.description == "Scale a deployment.\n\nWaits for the rollout in safe mode."
    )
    assert scale_deployment.spec.parameters["properties"]["mode"]["enum"] == ["fast", "safe"]
    assert delete_pod.idempotent is False


async def test_a_sync_tool_runs_in_a_thread_and_its_result_is_text():
    seen: list[str] = []

    @tool
    def where() -> str:
        """Report the thread."""
        seen.append(threading.current_thread().name)
        return "ok"

    assert await where.invoke({}) == ToolResult(content="ok")
    assert seen != [threading.current_thread().name]
    assert await delete_pod.invoke({"name": "nginx-123"}) == ToolResult(
        content="deleted default/nginx-123 after 30s"
    )


async def test_an_async_tool_result_that_is_not_text_becomes_json():
    result = await scale_deployment.invoke({"name": "web", "replicas": 3})
    assert result == ToolResult(content='{"name": "web", "replicas": 3, "mode": "safe"}')


async def test_arguments_are_validated_before_the_function_runs():
    calls: list[int] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        calls.append(n)
        return n

    bad = await count.invoke({"n": "many"})
    assert bad.is_error and bad.content.startswith(
        "invalid arguments for count: n: Input should be a valid integer"
    )
    extra = await count.invoke({"n": 1, "m": 2})
    assert extra.is_error and "m: Extra inputs are not permitted" in extra.content
    missing = await count.invoke({})
    assert missing.is_error and "n: Field required" in missing.content
    assert calls == []


async def test_a_tool_that_raises_gives_an_error_result_and_the_run_goes_on():
    @tool
    def explode(reason: str) -> str:
        """Fail."""
        raise RuntimeError(reason)

    assert await explode.invoke({"reason": "disk full"}) == ToolResult(
        content="disk full", is_error=True
    )


async def test_a_tool_s_exception_reaches_the_model_in_words_its_name_only_where_it_helps():
    @tool
    def fail(kind: str) -> str:
        """Fail in the way asked."""
        match kind:
            case "lookup":
                raise LookupError("There is no pod named 'nginx-123'.")
            case "file":
                open("/nonexistent/signoff/notes.txt")  # noqa: SIM115 (it raises)
            case "key":
                raise KeyError("replicas")
        raise ValueError

    said = {
        kind: (await fail.invoke({"kind": kind})).content for kind in ("lookup", "file", "key", "")
    }
    assert said == {
        "lookup": "There is no pod named 'nginx-123'.",
        "file": "No such file or directory: '/nonexistent/signoff/notes.txt'",
        "key": "fail failed: KeyError 'replicas'",
        "": "fail failed (ValueError, with no message)",
    }


class Target(BaseModel):
    host: str
    port: int = 443


async def test_pydantic_models_work_as_arguments_and_results():
    @tool
    def probe(target: Target) -> Target:
        """Probe a target."""
        return target

    assert probe.spec.parameters["properties"]["target"]["$ref"] == "#/$defs/Target"
    result = await probe.invoke({"target": {"host": "db"}})
    assert result == ToolResult(content='{"host":"db","port":443}')


def test_a_type_hint_that_cannot_be_resolved_is_a_clear_error():
    def local(value: Missing) -> None:  # type: ignore[name-defined]  # noqa: F821
        """No."""

    with pytest.raises(TypeError, match="cannot resolve a type hint"):
        Tool(local)


def test_variadic_parameters_cannot_be_described_to_a_model():
    def anything(*args: int) -> None:
        """No."""

    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs"):
        Tool(anything)
