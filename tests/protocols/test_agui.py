"""AG-UI at ``POST /agui/{agent}`` against a real uvicorn server: the stream event by event, the
state's JSON Patches checked against fresh snapshots, resumes that are refused, each run's stream
judged on its own by ag-ui-validate, and the official client, @ag-ui/client's HttpAgent, through
interrupt → resume with approve, edit and reject."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import httpx
import jsonpatch
import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from signoff import Answer, Approve, Edit, Policy
from signoff.protocols.agui import CHANNEL, AguiAgent
from signoff.server import Service
from signoff.store import SQLStore
from tests.deadline import HANG
from tests.protocols.a2a_agents import FOUR_EYES
from tests.protocols.live import ran, serving

ROOT = Path(__file__).resolve().parents[2]
ALICE = {"Authorization": "Bearer alice-token"}
BOB = {"Authorization": "Bearer bob-token"}


async def run(http: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of one AG-UI run, in order."""
    events = []
    async with http.stream("POST", "/agui/ops", json=body) as response:
        assert response.status_code == 200, (await response.aread()).decode()
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    return events


def turn(thread: str, run_id: str, text: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run_id,
        "messages": [{"id": f"{run_id}-u", "role": "user", "content": text}],
    }


def resume(thread: str, run_id: str, *entries: dict[str, Any]) -> dict[str, Any]:
    return {"threadId": thread, "runId": run_id, "messages": [], "resume": list(entries)}


def approve(interrupt: str, **payload: Any) -> dict[str, Any]:
    return {"interruptId": interrupt, "status": "resolved", "payload": {"approved": True} | payload}


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def findings(events: list[dict[str, Any]]) -> list[str]:
    """What ag-ui-validate finds wrong with one run's stream, judged on its own (as a stream
    that uses shared state): its errors and warnings. Its info notes are not faults."""
    report = validate_agui(events, features=["shared-state"])
    return [
        f"{d.rule} ({d.severity}) at event {d.event_index}: {d.message}"
        for d in report.diagnostics
        if d.severity != "info"
    ]


async def fresh(service: Service, thread: str) -> dict[str, Any]:
    """The thread's state as a new run's STATE_SNAPSHOT would show it now."""
    return await AguiAgent(service, "ops").threads.state(thread)


class Shadow:
    """What a client holds: the state from the snapshot, patched by each delta; each activity
    from its snapshot, patched by each of its deltas."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self.activities: dict[str, dict[str, Any]] = {}

    def apply(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            match event["type"]:
                case "STATE_SNAPSHOT":
                    self.state = copy.deepcopy(event["snapshot"])
                case "STATE_DELTA":
                    self.state = jsonpatch.apply_patch(self.state, event["delta"])
                case "ACTIVITY_SNAPSHOT":
                    self.activities[event["messageId"]] = copy.deepcopy(event["content"])
                case "ACTIVITY_DELTA":
                    self.activities[event["messageId"]] = jsonpatch.apply_patch(
                        self.activities[event["messageId"]], event["patch"]
                    )


async def test_an_interrupt_and_its_resume_event_by_event(store: SQLStore, side: Path):
    async with (
        serving(store) as (url, service),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as http,
    ):
        shadow = Shadow()
        asked = await run(http, turn("t1", "r1", "delete a and b"))
        assert types(asked) == [
            "RUN_STARTED", "STATE_SNAPSHOT",
            "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
            *["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"] * 3,
            "TOOL_CALL_RESULT",  # list_pods, allowed, ran at once
            "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",  # the explanation
            "ACTIVITY_SNAPSHOT", "ACTIVITY_SNAPSHOT", "STATE_DELTA", "RUN_FINISHED",
        ]  # fmt: skip
        assert asked[1]["snapshot"] == {"view": {"tasks": {}, "pendingInterrupts": {}}}
        shadow.apply(asked)
        assert shadow.state == await fresh(service, "t1")
        finished = asked[-1]
        assert finished["outcome"]["type"] == "interrupt"
        first, second = finished["outcome"]["interrupts"]
        [task] = shadow.state["view"]["tasks"]
        assert (first["id"], second["id"]) == (f"hitl-{task}-1", f"hitl-{task}-2")
        started = {
            e["toolCallId"]: e["toolCallName"] for e in asked if e["type"] == "TOOL_CALL_START"
        }
        assert started[first["toolCallId"]] == started[second["toolCallId"]] == "delete_pod"
        assert first["metadata"]["args"] == {"name": "a"}
        assert first["expiresAt"] is not None  # the rule's 1h timeout
        schema = first["responseSchema"]
        assert schema["required"] == ["approved"]
        assert set(schema["properties"]) == {
            "approved", "editedArgs", "reason", "response", "version",
        }  # fmt: skip
        assert schema["properties"]["version"]["const"] == first["metadata"]["version"] == 1
        assert schema["properties"]["editedArgs"]["properties"]["name"]["type"] == "string"
        explanation = asked[-6]["delta"]
        assert "delete_pod" in explanation and "need your approval" in explanation
        assert shadow.state["view"]["tasks"][task] == {
            "status": "input-required",
            "lastRunId": "r1",
            "lastInterruptId": second["id"],
            "summaries": [],
        }
        assert set(shadow.state["view"]["pendingInterrupts"]) == {first["id"], second["id"]}
        activity = shadow.activities[first["id"]]
        assert (activity["stage"], activity["taskId"], activity["tool"]) == (
            "awaiting_input", task, "delete_pod",
        )  # fmt: skip
        assert ran(side) == ["list_pods"]

        answered = await run(
            http,
            resume("t1", "r2", approve(first["id"]), {
                "interruptId": second["id"], "status": "resolved",
                "payload": {"approved": False, "reason": "keep b"},
            }),
        )  # fmt: skip
        assert types(answered) == [
            "RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT",
            "ACTIVITY_DELTA", "ACTIVITY_DELTA", "STATE_DELTA",
            "TOOL_CALL_RESULT", "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
            "ACTIVITY_DELTA", "ACTIVITY_DELTA", "STATE_DELTA", "RUN_FINISHED",
        ]  # fmt: skip
        # It opens with the conversation so far as the first run streamed it, under the same
        # ids (the user's message under the client's): each call its own assistant message,
        # a result right after its call; the results that follow answer calls it holds.
        conversation = answered[2]["messages"]
        words, ask = (e["messageId"] for e in asked if e["type"] == "TEXT_MESSAGE_START")
        listing, a, b = (e["toolCallId"] for e in asked if e["type"] == "TOOL_CALL_START")
        [listed] = (e["messageId"] for e in asked if e["type"] == "TOOL_CALL_RESULT")
        assert [(m["id"], m["role"]) for m in conversation] == [
            ("r1-u", "user"), (words, "assistant"), (listing, "assistant"), (listed, "tool"),
            (a, "assistant"), (b, "assistant"), (ask, "assistant"),
        ]  # fmt: skip
        assert [c["id"] for m in conversation for c in m.get("toolCalls", [])] == [listing, a, b]
        results = [e["toolCallId"] for e in answered if e["type"] == "TOOL_CALL_RESULT"]
        assert results == [a, b] == [first["toolCallId"], second["toolCallId"]]
        assert conversation[-1]["content"] == explanation
        shadow.apply(answered)
        assert shadow.state == await fresh(service, "t1")
        assert shadow.state["view"]["pendingInterrupts"] == {}
        assert shadow.state["view"]["tasks"][task]["status"] == "completed"
        assert shadow.state["view"]["tasks"][task]["lastRunId"] == "r2"
        assert shadow.activities[first["id"]] | {"values": None} == shadow.activities[
            first["id"]
        ] | {"stage": "completed", "decision": "approved", "values": None}
        assert shadow.activities[second["id"]]["decision"] == "rejected"
        assert shadow.activities[second["id"]]["values"] == {"reason": "keep b"}
        assert "keep b" in answered[-1]["result"] and "deleted a" in answered[-1]["result"]
        assert sorted(ran(side)) == ["delete_pod a", "list_pods"]

        # The same resume again is safe: nothing runs twice, the run ends as the task did, and
        # each activity is told the decision as it was taken.
        again = await run(http, resume("t1", "r3", approve(first["id"]), approve(second["id"])))
        assert types(again) == [
            "RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT",
            "ACTIVITY_DELTA", "ACTIVITY_DELTA",
            "STATE_DELTA",  # lastRunId
            "RUN_FINISHED",
        ]  # fmt: skip
        assert again[-1]["result"] == answered[-1]["result"]
        told = {e["messageId"]: e["patch"] for e in again if e["type"] == "ACTIVITY_DELTA"}
        assert told[second["id"]][1]["value"] == "rejected"
        assert told[second["id"]][2]["value"] == {"decidedBy": "alice", "reason": "keep b"}
        assert sorted(ran(side)) == ["delete_pod a", "list_pods"]


SNAPSHOTS = Path(__file__).parent / "snapshots"


def normalized(events: list[dict[str, Any]], task: str) -> list[dict[str, Any]]:
    """The events with what differs between runs replaced: the task's id by ``<task>``, other
    ids (approvals') by ``<id-N>`` in order of appearance, expiry times by ``<time>``."""
    text = json.dumps(events).replace(task, "<task>")
    ids: dict[str, str] = {}
    text = re.sub(
        r"\b[0-9a-f]{32}\b", lambda m: ids.setdefault(m.group(0), f"<id-{len(ids) + 1}>"), text
    )
    text = re.sub(r'"expiresAt": "[^"]*"', '"expiresAt": "<time>"', text)
    text = re.sub(r"\(until [^)]*\)", "(until <time>)", text)
    loaded: list[dict[str, Any]] = json.loads(text)
    return loaded


def matches_snapshot(name: str, events: list[dict[str, Any]]) -> None:
    """`events` equal the stored stream `name` (written anew with SIGNOFF_UPDATE_SNAPSHOTS=1)."""
    path = SNAPSHOTS / f"{name}.json"
    if os.environ.get("SIGNOFF_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(events, indent=1, ensure_ascii=False) + "\n")
    assert events == json.loads(path.read_text()), f"the stream differs from {path.name}"


async def test_the_streams_of_an_interrupt_and_its_resume_are_the_stored_ones(
    store: SQLStore, side: Path
):
    async with (
        serving(store) as (url, _),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as http,
    ):
        asked = await run(http, turn("t9", "r1", "delete a and b"))
        first, second = (i["id"] for i in asked[-1]["outcome"]["interrupts"])
        task = asked[-1]["outcome"]["interrupts"][0]["metadata"]["taskId"]
        reject = {"interruptId": second, "status": "resolved",
                  "payload": {"approved": False, "reason": "keep b"}}  # fmt: skip
        answered = await run(http, resume("t9", "r2", approve(first), reject))
    matches_snapshot("agui-interrupt", normalized(asked, task))
    matches_snapshot("agui-resume", normalized(answered, task))


async def test_ag_ui_validate_finds_nothing_wrong_in_any_run_of_an_interrupt_and_its_resume(
    store: SQLStore, side: Path
):
    streams: dict[str, list[dict[str, Any]]] = {}

    async def held(http: httpx.AsyncClient, name: str, words: str) -> list[str]:
        """Start the turn `name` (its thread too) and keep its stream: its interrupts' ids."""
        streams[name] = await run(http, turn(name, f"{name}-1", words))
        return [i["id"] for i in streams[name][-1]["outcome"]["interrupts"]]

    async with (
        serving(store) as (url, _),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as http,
    ):
        streams["plain"] = await run(http, turn("plain", "plain-1", "hello"))
        a, b = await held(http, "mixed", "delete a and b")
        reject_b = {"interruptId": b, "status": "resolved",
                    "payload": {"approved": False, "reason": "keep b"}}  # fmt: skip
        streams["mixed: resumed"] = await run(http, resume("mixed", "r2", approve(a), reject_b))
        streams["mixed: resumed again"] = await run(
            http, resume("mixed", "r3", approve(a), reject_b)
        )
        [x] = await held(http, "approve", "delete x")
        streams["approve: resumed"] = await run(http, resume("approve", "r2", approve(x)))
        [web] = await held(http, "edit", "scale web to 3")
        edit = approve(web, editedArgs={"name": "web", "replicas": 5})
        streams["edit: resumed"] = await run(http, resume("edit", "r2", edit))
        [y] = await held(http, "respond", "delete y")
        respond = approve(y, response="y is gone")
        streams["respond: resumed"] = await run(http, resume("respond", "r2", respond))
        [z] = await held(http, "reject", "delete z")
        reject = {"interruptId": z, "status": "resolved", "payload": {"approved": False}}
        streams["reject: resumed"] = await run(http, resume("reject", "r2", reject))
        [w] = await held(http, "cancel", "delete w")
        cancel = {"interruptId": w, "status": "cancelled"}
        streams["cancel: resumed"] = await run(http, resume("cancel", "r2", cancel))
        # A resume whose task then holds another call: it streams that call and interrupts.
        [p] = await held(http, "then", "delete p then q")
        streams["then: resumed"] = await run(http, resume("then", "r2", approve(p)))
        [q] = [i["id"] for i in streams["then: resumed"][-1]["outcome"]["interrupts"]]
        streams["then: resumed twice"] = await run(http, resume("then", "r3", approve(q)))
        streams["refused"] = await run(http, resume("plain", "r2", approve("hitl-nope-1")))
    assert types(streams["refused"])[-1] == "RUN_ERROR"
    found = {name: findings(events) for name, events in streams.items()}
    assert found == {name: [] for name in streams}


async def test_a_resume_that_misses_repeats_or_invents_an_interrupt_changes_nothing(
    store: SQLStore, side: Path
):
    async with (
        serving(store) as (url, service),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as http,
    ):
        asked = await run(http, turn("t2", "r1", "delete x and y"))
        first, second = (i["id"] for i in asked[-1]["outcome"]["interrupts"])
        refusals = [
            ([approve(first)], f"not answered: {second}"),
            ([approve(first), approve(first), approve(second)], f"answered twice: {first}"),
            ([approve(first), approve(second), approve("hitl-nope-1")], "hitl-nope-1"),
            (
                [approve(first), {"interruptId": second, "status": "resolved", "payload": {}}],
                f"resume entry {second}: payload needs 'approved'",
            ),
            ([approve(first), approve(second, colour="red")], "unknown payload fields ['colour']"),
            (
                [approve(first), approve(second, editedArgs={"name": "y"}, response="no")],
                "give editedArgs or response, not both",
            ),
        ]
        for n, (entries, words) in enumerate(refusals):
            refused = await run(http, resume("t2", f"rx{n}", *entries))
            assert types(refused) == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_ERROR"], refused
            assert words in refused[-1]["message"], refused[-1]["message"]
            # The snapshot shows the client what is still open.
            assert set(refused[1]["snapshot"]["view"]["pendingInterrupts"]) == {first, second}
        # A new turn while the interrupts are open is refused too.
        busy = await run(http, turn("t2", "ry", "hello"))
        assert types(busy) == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_ERROR"]
        assert first in busy[-1]["message"]
        state = await fresh(service, "t2")
        assert set(state["view"]["pendingInterrupts"]) == {first, second}
        assert ran(side) == ["list_pods"]
        # An edit the tool's schema refuses is refused as a whole, and nothing is decided.
        asked_scale = await run(http, turn("t3", "s1", "scale web to 3"))
        [held] = asked_scale[-1]["outcome"]["interrupts"]
        too_many = approve(held["id"], editedArgs={"name": "web", "replicas": 99})
        refused = await run(http, resume("t3", "s2", too_many))
        assert types(refused)[-1] == "RUN_ERROR" and "/replicas" in refused[-1]["message"]
        assert set((await fresh(service, "t3"))["view"]["pendingInterrupts"]) == {held["id"]}


async def test_a_decision_in_the_inbox_is_what_the_next_run_on_the_thread_sees(
    store: SQLStore, side: Path
):
    async with (
        serving(store) as (url, service),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as http,
    ):
        asked = await run(http, turn("t4", "r1", "delete web-1"))
        [interrupt] = asked[-1]["outcome"]["interrupts"]
        decided = await http.post(
            f"/v1/approvals/{interrupt['metadata']['approvalId']}/decision",
            json={"kind": "reject", "reason": "not now"},
        )
        assert decided.status_code == 200, decided.text
        async with asyncio.timeout(HANG):
            while (await fresh(service, "t4"))["view"]["tasks"][interrupt["metadata"]["taskId"]][
                "status"
            ] != "completed":
                await asyncio.sleep(0.05)
        nxt = await run(http, turn("t4", "r2", "hello"))
        assert nxt[1]["snapshot"]["view"]["pendingInterrupts"] == {}
        task = nxt[1]["snapshot"]["view"]["tasks"][interrupt["metadata"]["taskId"]]
        assert task["summaries"] == ["delete_pod: rejected by alice"]
        assert types(nxt)[-1] == "RUN_FINISHED"
        assert ran(side) == []


async def test_a_resume_that_is_one_approval_of_two_ends_with_the_interrupt_still_open(
    store: SQLStore, side: Path
):
    two = Policy.from_dict({"rules": [{"ask": "delete_pod", "approvals": {"count": 2}}]})
    async with (
        serving(store, policy=two) as (url, service),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as http,
    ):
        asked = await run(http, turn("t-two", "r1", "delete a"))
        [interrupt] = asked[-1]["outcome"]["interrupts"]
        # bob's approval is one of two (alice asked: she is not one): the run waits on, and
        # the stream says so at once.
        bob = {"Authorization": "Bearer bob-token"}
        async with httpx.AsyncClient(base_url=url, headers=bob, timeout=HANG) as as_bob:
            again = await run(as_bob, resume("t-two", "r2", approve(interrupt["id"])))
        assert again[-1]["type"] == "RUN_FINISHED", again[-1]
        assert [i["id"] for i in again[-1]["outcome"]["interrupts"]] == [interrupt["id"]]
        assert findings(again) == []
        assert ran(side) == []
        [pending] = await store.list_approvals(status="pending")
        assert [v.by for v in pending.votes] == ["bob"]
        await service.gate.decide(pending.id, Approve(), actor="carol")
        async with asyncio.timeout(HANG):
            while ran(side) != ["delete_pod a"]:
                await asyncio.sleep(0.02)


async def test_a_resume_on_the_call_before_an_edit_takes_nothing_and_interrupts_again(
    store: SQLStore, side: Path
):
    """Four eyes: alice asks; olga edits the call in signoff after bob's client was shown
    version 1. Bob's resume of version 1 takes nothing: the run ends on the interrupt again, its
    call as edited, saying what changed; his resume of version 2 runs the edited call."""
    async with (
        serving(store, policy=FOUR_EYES) as (url, service),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as alice,
        httpx.AsyncClient(base_url=url, headers=BOB, timeout=HANG) as bob,
    ):
        asked = await run(alice, turn("t-v", "r1", "scale web to 3"))
        [shown] = asked[-1]["outcome"]["interrupts"]
        assert shown["metadata"]["version"] == 1 and "requestedArgs" not in shown["metadata"]
        assert shown["responseSchema"]["properties"]["version"]["const"] == 1
        approval_id = shown["metadata"]["approvalId"]
        nine = Edit(args={"name": "web", "replicas": 9})
        await service.decide(approval_id, nine, actor="olga", roles=(), version=1)
        length = await store.audit_length()

        stale = await run(bob, resume("t-v", "r2", approve(shown["id"], version=1)))
        assert types(stale) == [
            "RUN_STARTED", "STATE_SNAPSHOT", "ACTIVITY_SNAPSHOT", "RUN_FINISHED",
        ]  # fmt: skip
        assert findings(stale) == []
        [again] = stale[-1]["outcome"]["interrupts"]
        assert again["id"] == shown["id"] and again["toolCallId"] == shown["toolCallId"]
        assert again["message"].startswith(f"Nothing was decided: approval '{approval_id}'")
        assert "edited by olga at " in again["message"] and "replicas 3 → 9" in again["message"]
        assert (again["metadata"]["version"], again["metadata"]["args"]) == (
            2, {"name": "web", "replicas": 9},
        )  # fmt: skip
        assert again["metadata"]["requestedArgs"] == {"name": "web", "replicas": 3}
        assert [c["by"] for c in again["metadata"]["changes"]] == ["olga"]
        assert again["responseSchema"]["properties"]["version"]["const"] == 2
        activity = stale[2]["content"]
        assert (activity["version"], activity["args"]["replicas"]) == (2, 9)
        assert activity["text"].startswith("Nothing was decided: ")
        assert stale[1]["snapshot"]["view"]["pendingInterrupts"][shown["id"]]["version"] == 2
        # Nothing written: the call waits on olga's one approval, and ran not.
        assert ran(side) == []
        [waiting] = await store.list_approvals(status="pending")
        assert (waiting.version, [v.by for v in waiting.votes]) == (2, ["olga"])
        assert await store.audit_length() == length
        assert (await fresh(service, "t-v")) == stale[1]["snapshot"]

        # Without a version, an approval of a call edited while it waited is refused alike.
        bare = await run(bob, resume("t-v", "r3", approve(shown["id"])))
        assert "must say which version" in bare[-1]["outcome"]["interrupts"][0]["message"]

        done = await run(bob, resume("t-v", "r4", approve(again["id"], version=2)))
        assert findings(done) == []
        assert done[-1]["type"] == "RUN_FINISHED" and done[-1]["result"] == "done: scaled web to 9"
        assert ran(side) == ["scale web 9"]


async def test_the_endpoint_needs_the_token_and_a_valid_input(store: SQLStore, side: Path):
    async with serving(store) as (url, _), httpx.AsyncClient(base_url=url) as http:
        body = turn("t5", "r1", "hello")
        assert (await http.post("/agui/ops", json=body)).status_code == 401
        bad = await http.post("/agui/ops", json={"threadId": "t5"}, headers=ALICE)
        assert bad.status_code == 422
        assert "runId" in bad.text or "run_id" in bad.text
        unknown = await http.post("/agui/nobody", json=body, headers=ALICE)
        assert unknown.status_code == 404


async def node_report(script: str, *args: str) -> Any:
    """What a Node client of tests/js (`script`, given `args`) reports on its stdout, as JSON;
    it must end well."""
    node = await asyncio.create_subprocess_exec(
        "node", str(ROOT / "tests/js" / script), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(HANG):
        out, err = await node.communicate()
    assert node.returncode == 0, err.decode()
    return json.loads(out)


@pytest.mark.parametrize("thread", ["js-thread"])
async def test_the_ag_ui_client_runs_interrupts_and_resumes_with_approve_edit_and_reject(
    store: SQLStore, side: Path, thread: str
):
    async with serving(store) as (url, service):
        report = await node_report("agui_client.mjs", url, "alice-token", thread)
        # The state the client built from the snapshots and deltas is the server's.
        assert report["state"] == await fresh(service, thread)
    batch = report["batch"]
    assert batch["outcome"] == "interrupt"
    assert [(i["tool"], i["args"]) for i in batch["interrupts"]] == [
        ("delete_pod", {"name": "a"}), ("delete_pod", {"name": "b"}),
    ]  # fmt: skip
    assert "keep b" in batch["result"] and "deleted a" in batch["result"]
    assert sorted(batch["activities"]) == [
        ["completed", "approved", "delete_pod"], ["completed", "rejected", "delete_pod"],
    ]  # fmt: skip
    assert (report["edit"]["outcome"], report["edit"]["result"]) == (
        "interrupt", "done: scaled web to 5",
    )  # fmt: skip
    assert report["replay"]["error"] is None and report["replay"]["types"][-1] == "RUN_FINISHED"
    elsewhere = report["elsewhere"]
    assert elsewhere["error"] is None and elsewhere["result"] == "hello"
    assert (elsewhere["activity"]["stage"], elsewhere["activity"]["decision"]) == (
        "completed", "rejected",
    )  # fmt: skip
    assert elsewhere["activity"]["values"] == {"decidedBy": "alice", "reason": "not z"}
    assert sorted(ran(side)) == ["delete_pod a", "list_pods", "scale web 5"]
    # Each resume opened with a MESSAGES_SNAPSHOT that is the conversation the client already
    # held, ids, order and words: applying it changed nothing the client had.
    for resumed in (batch, report["edit"], report["replay"]):
        [snapshot] = resumed["snapshots"]
        assert snapshot["sent"] == snapshot["held"]
    # The client ends with each message once, each call once, each result once and for a call
    # it holds.
    messages = report["messages"]
    calls = [c for m in messages for c in m["calls"]]
    results = [m["answers"] for m in messages if m["role"] == "tool"]
    assert len({m["id"] for m in messages}) == len(messages)
    assert len(set(calls)) == len(calls) == 5  # list_pods, delete a and b, scale, delete z
    # delete z's result came while the client was away, and its next run moved on to new words.
    assert len(set(results)) == len(results) == 4 and set(results) <= set(calls)


async def test_the_ag_ui_client_resumes_on_the_version_it_shows_and_gets_the_edit_it_missed(
    store: SQLStore, side: Path
):
    """@ag-ui/client, four eyes: alice asks, carol edits the call through the API while the
    client shows version 1, bob answers from the same client with that version — the run
    interrupts again with the call as edited — then answers the new interrupt, which runs."""
    async with serving(store, policy=FOUR_EYES) as (url, service):
        report = await node_report(
            "agui_versions.mjs", url, "alice-token", "carol-token", "bob-token", "js-versions"
        )
        assert report["state"] == await fresh(service, "js-versions")
    shown = report["asked"]["interrupt"]
    assert (shown["version"], shown["args"], shown["requestedArgs"]) == (
        1, {"name": "web", "replicas": 3}, None,
    )  # fmt: skip
    assert shown["schemaVersion"]["const"] == 1
    assert report["edited"] == {"status": 200, "version": 2}
    stale = report["stale"]
    assert (stale["error"], stale["outcome"]) == (None, "interrupt")
    again = stale["interrupt"]
    assert again["id"] == shown["id"]
    assert "edited by carol at " in again["message"] and "replicas 3 → 9" in again["message"]
    assert (again["version"], again["args"], again["requestedArgs"]) == (
        2, {"name": "web", "replicas": 9}, {"name": "web", "replicas": 3},
    )  # fmt: skip
    assert again["schemaVersion"]["const"] == 2
    assert (stale["activity"]["version"], stale["activity"]["stage"]) == (2, "awaiting_input")
    # bob's answer to version 1 took nothing: the call still waited on carol's one approval.
    assert report["held"] == {"status": "pending", "version": 2, "votes": ["carol"]}
    done = report["done"]
    assert (done["error"], done["result"], done["pending"]) == (None, "done: scaled web to 9", 0)
    assert ran(side) == ["scale web 9"]


async def test_respond_and_cancel_answer_interrupts_and_a_task_that_asks_again_interrupts_again(
    store: SQLStore, side: Path
):
    async with (
        serving(store) as (url, service),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as http,
    ):
        asked = await run(http, turn("t6", "r1", "delete a and b"))
        first, second = (i["id"] for i in asked[-1]["outcome"]["interrupts"])
        cancelled = {"interruptId": second, "status": "cancelled"}
        answered = await run(
            http, resume("t6", "r2", approve(first, response="a is gone"), cancelled)
        )
        assert answered[-1]["type"] == "RUN_FINISHED"
        assert "a is gone" in answered[-1]["result"]
        assert "the interrupt was cancelled" in answered[-1]["result"]
        decided = [e for e in answered if e["type"] == "ACTIVITY_DELTA" and len(e["patch"]) == 3]
        assert [d["patch"][1]["value"] for d in decided] == ["provided", "rejected"]
        assert ran(side) == ["list_pods"]  # neither delete ran

        # "delete p then q": the second call is asked for only after the first has run.
        shadow = Shadow()
        one = await run(http, turn("t7", "s1", "delete p then q"))
        shadow.apply(one)
        [p] = one[-1]["outcome"]["interrupts"]
        two = await run(http, resume("t7", "s2", approve(p["id"])))
        shadow.apply(two)
        assert two[-1]["outcome"]["type"] == "interrupt"
        [q] = two[-1]["outcome"]["interrupts"]
        assert q["id"].endswith("-2") and q["metadata"]["args"] == {"name": "q"}
        # The first activity was done with before this run ended; the second was shown anew.
        assert shadow.activities[p["id"]]["stage"] == "completed"
        assert shadow.activities[q["id"]]["stage"] == "awaiting_input"
        assert shadow.state == await fresh(service, "t7")
        # Its calls streamed: q's call came in this run before its interrupt.
        started = [e["toolCallId"] for e in two if e["type"] == "TOOL_CALL_START"]
        assert started == [q["toolCallId"]]
        # The first resume again names p only: q, open, is missing.
        stale = await run(http, resume("t7", "s3", approve(p["id"])))
        assert (
            stale[-1]["type"] == "RUN_ERROR" and f"not answered: {q['id']}" in stale[-1]["message"]
        )
        three = await run(http, resume("t7", "s4", approve(q["id"])))
        shadow.apply(three)
        assert three[-1]["type"] == "RUN_FINISHED" and three[-1]["result"] == "done: deleted q"
        assert shadow.state == await fresh(service, "t7")
        assert ran(side) == ["list_pods", "delete_pod p", "delete_pod q"]


async def test_decided_elsewhere_the_client_resumes_as_it_must_and_goes_on_with_its_new_words(
    store: SQLStore, side: Path
):
    async with (
        serving(store) as (url, service),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as http,
    ):
        asked = await run(http, turn("t8", "r1", "delete c and d"))
        c, d = asked[-1]["outcome"]["interrupts"]
        inbox = {"Authorization": "Bearer bob-token"}
        decided = await http.post(
            f"/v1/approvals/{c['metadata']['approvalId']}/decision",
            json={"kind": "approve"}, headers=inbox,
        )  # fmt: skip
        assert decided.status_code == 200
        # Part decided in the inbox: the client answers both (as @ag-ui/client must); c's answer
        # is taken as already given, d's decides d.
        reject_d = {"interruptId": d["id"], "status": "resolved",
                    "payload": {"approved": False, "reason": "keep d"}}  # fmt: skip
        answered = await run(http, resume("t8", "r2", approve(c["id"]), reject_d))
        told = {e["messageId"]: e["patch"] for e in answered if e["type"] == "ACTIVITY_DELTA"}
        assert told[c["id"]][2]["value"] == {"decidedBy": "bob"}
        assert answered[-1]["type"] == "RUN_FINISHED"
        assert sorted(ran(side)) == ["delete_pod c", "list_pods"]

        # All decided elsewhere, and the person said something new meanwhile: the resume
        # acknowledges the decision, and the new words start the next task.
        asked = await run(http, turn("t8", "r3", "delete e"))
        [e] = asked[-1]["outcome"]["interrupts"]
        decided = await http.post(
            f"/v1/approvals/{e['metadata']['approvalId']}/decision",
            json={"kind": "reject", "reason": "not e"}, headers=inbox,
        )  # fmt: skip
        async with asyncio.timeout(HANG):
            while (await fresh(service, "t8"))["view"]["tasks"][e["metadata"]["taskId"]][
                "status"
            ] != "completed":
                await asyncio.sleep(0.05)
        body = resume("t8", "r4", approve(e["id"]))
        body["messages"] = [{"id": "new-words", "role": "user", "content": "scale web to 2"}]
        goes_on = await run(http, body)
        told = {ev["messageId"]: ev["patch"] for ev in goes_on if ev["type"] == "ACTIVITY_DELTA"}
        assert told[e["id"]][1]["value"] == "rejected"  # as bob decided, not as the client asked
        assert goes_on[-1]["outcome"]["interrupts"][0]["metadata"]["tool"] == "scale"
        assert "delete_pod e" not in ran(side)


async def test_a_run_sent_twice_is_one_run_and_ids_are_checked(store: SQLStore, side: Path):
    async with (
        serving(store) as (url, service),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as http,
    ):
        body = turn("t10", "r1", "delete w and z")
        first, again = await run(http, body), await run(http, body)
        assert first[-1]["outcome"] == again[-1]["outcome"]
        assert ran(side) == ["list_pods"]  # once
        assert len((await fresh(service, "t10"))["view"]["tasks"]) == 1
        long = await run(http, turn("t10", "r" * 201, "hello"))
        assert long[-1]["type"] == "RUN_ERROR" and "runId must have 1 to 200" in long[-1]["message"]
        # A thread of another agent is not continued here.
        greeted = await http.post("/agui/greeter", json=turn("t11", "g1", "hi"))
        assert greeted.status_code == 200
        borrowed = await run(http, turn("t11", "r2", "hello"))
        assert borrowed[-1]["type"] == "RUN_ERROR"
        assert "a conversation of another agent" in borrowed[-1]["message"]


async def test_a_nul_character_in_an_id_ends_the_run_before_anything_is_read_or_written(
    store: SQLStore, side: Path
):
    """PostgreSQL keeps no NUL in text, SQLite would: both refuse such an id alike, naming the
    field. A NUL in the words (kept inside JSON) is no problem."""
    async with (
        serving(store) as (url, _),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as http,
    ):
        for body, field in (
            (turn("t\x00", "r1", "hello"), "threadId"),
            (turn("t13", "r\x00", "hello"), "runId"),
            (resume("t13", "r\x00", approve("hitl-x-1")), "runId"),
        ):
            refused = await run(http, body)
            assert types(refused) == ["RUN_STARTED", "RUN_ERROR"], refused
            assert refused[-1]["code"] == "invalid_input"
            assert refused[-1]["message"].startswith(f"{field} has a NUL character")
        assert await store.list_runs() == []
        assert await store.notes(CHANNEL, "t13") == []
        said = await run(http, turn("t13", "r1", "hello\x00there"))
        assert types(said)[-1] == "RUN_FINISHED"
        [task] = await store.list_runs(thread_id="t13")
        assert (await store.run_messages(task.id))[0]["content"] == "hello\x00there"


async def test_a_quiet_stream_sends_keep_alive_comments_between_events(
    store: SQLStore, side: Path, monkeypatch: pytest.MonkeyPatch
):
    from signoff.protocols.agui import transport

    monkeypatch.setattr(transport, "KEEP_ALIVE", 0.2)
    async with (
        serving(store) as (url, _),
        httpx.AsyncClient(base_url=url, headers=ALICE, timeout=HANG) as http,
        http.stream("POST", "/agui/ops", json=turn("t12", "r1", "slowly delete web-1")) as response,
    ):
        lines = [line async for line in response.aiter_lines() if line]
    # The model thinks for a second: comments keep the stream open meanwhile; events go on.
    assert lines.count(": keep-alive") >= 3
    events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert types(events)[0] == "RUN_STARTED" and types(events)[-1] == "RUN_FINISHED"


async def test_the_ag_ui_client_answers_a_question_once_with_an_answer_that_fits(
    store: SQLStore, side: Path
):
    """@ag-ui/client: the question comes as an interrupt whose schema is its choices; an
    answer that does not fit is a RUN_ERROR naming the field, nothing written; the one that
    fits is the ask tool's result; another answer after it is refused naming who answered."""
    async with serving(store) as (url, service):
        report = await node_report("agui_question.mjs", url, "alice-token", "js-question")
        [approval] = await service.store.list_approvals(limit=5)
    interrupt = report["interrupt"]
    assert (interrupt["reason"], interrupt["message"]) == ("question", "Which region?")
    assert interrupt["responseSchema"]["properties"]["answer"] == {
        "type": "string", "enum": ["eu-west", "us-east"],
    }  # fmt: skip
    assert interrupt["responseSchema"]["required"] == ["answer"]
    assert (interrupt["metadata"]["kind"], interrupt["metadata"]["choices"]) == (
        "question", ["eu-west", "us-east"],
    )  # fmt: skip
    assert report["activity"]["question"] == "Which region?"
    assert report["misfit"] == {
        "message": "answer: not one of ['eu-west', 'us-east']; nothing changed",
        "code": "refused",
    }
    told = json.loads(report["result"].removeprefix("done: "))
    assert told == {"status": "answered", "answer": "us-east", "answered_by": "alice"}
    assert report["answeredError"] is None
    assert (report["settled"]["decision"], report["settled"]["values"]) == (
        "answered", {"answer": "us-east"},
    )  # fmt: skip
    assert report["again"]["code"] == "conflict"
    assert (
        "the question was already answered by 'alice'; nothing changed"
        in (report["again"]["message"])
    )
    assert (approval.status, approval.decision, approval.decided_by) == (
        "answered", Answer(value="us-east"), "alice",
    )  # fmt: skip
