"""Pending approvals, rendered and decided inside any Streamlit app (``signoff[streamlit]``).

    import streamlit as st
    from signoff.channels.streamlit import approvals

    approvals("http://127.0.0.1:8000", token=st.secrets["signoff_token"])

Each pending call shows its tool and arguments, why the policy asks, who asked (and what the run
was asked to do), and how long it may still wait. A person approves it, edits its arguments,
answers it with text instead of running it, rejects it with a reason, or approves it always
within a scope. Over a server the decider is the token's principal; on a `LocalStore`, the actor
the app names. What the server refuses (an edit its schema rejects, a decider without the rule's
role, a call someone decided first) shows on the call's card as an error, never as a traceback.

A question an agent asks (`signoff.gate.questions`) shows its text and is answered there: a
choice, several, text, or its form's fields — or declined with a reason. The gate judges the
answer: one that does not fit, or one given after someone else's, is refused on the card naming
the field, or who answered.

A decision is sent with the version of the call its card showed: when the call changed since (an
edit, another person's approval, a handover), it is refused, the card says what changed and shows
the call as it is now — an edit by another approver with both argument sets — for a second look.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from signoff.channels.sources import LocalStore, Server, Source, approvals_so_far, edited_by
from signoff.channels.streamlit_question import question_actions
from signoff.errors import MissingExtraError, SignoffError
from signoff.types import Approve, Decision, Edit, Reject, Respond, Scope, ScopeKind

try:
    import httpx  # noqa: F401 - `Server`'s client: missing, the same extra installs it
    import streamlit as st
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise MissingExtraError("signoff.channels.streamlit", "streamlit") from exc

__all__ = ["LocalStore", "Server", "approvals"]

_SCOPES: dict[ScopeKind, tuple[str, str]] = {
    "run": ("run_id", "this run only (its later turns), when its requester makes them"),
    "thread": ("thread_id", "this conversation (thread), when its requester makes them"),
    "agent": ("agent", "any run or thread, whoever makes them"),
    "global": ("", "everywhere, whoever makes them"),
}
"""Each scope of "approve always": the field an approval needs to have it, and its words. A
run or thread grant also needs the approval's requester: it covers only their calls. The thread
is the default: a conversation's next message is a new run, where a run grant never fires."""
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:$])")
_DONE = {"approved": "Approved", "edited": "Edited and approved", "responded": "Answered",
         "rejected": "Rejected", "answered": "Answered"}  # fmt: skip


def approvals(
    source: str | Source,
    *,
    token: str | None = None,
    agent: str | None = None,
    tool: str | None = None,
    key: str = "signoff",
    refresh: float | None = 10.0,
    limit: int = 50,
) -> None:
    """Render the pending approvals of `source` — a signoff server's URL (decided as `token`'s
    principal), or a `Server` or `LocalStore` — each with approve, edit, respond, reject and
    approve-always.

    `agent` and `tool` show only that agent's or tool's calls; `limit` the newest that many.
    `key` prefixes every widget's key: give each a different one to show two on one page. The
    list renders again every `refresh` seconds (new calls, the countdowns), or only when the
    app reruns with None.
    """
    if isinstance(source, str):
        source = Server(source, token=token)
    elif token is not None:
        raise ValueError("token= goes with a server's URL; a Server or LocalStore carries its own")
    where: Source = source

    def render() -> None:
        _render(where, agent=agent, tool=tool, key=key, limit=limit)

    if refresh is None:
        render()
    else:
        st.fragment(render, run_every=refresh)()


def _render(source: Source, *, agent: str | None, tool: str | None, key: str, limit: int) -> None:
    done = st.session_state.get(f"{key}:done")
    if done:
        st.success(done)
    try:
        items = source.pending(agent=agent, tool=tool, limit=limit)
    except SignoffError as exc:
        st.error(f"The pending approvals cannot be read: {exc}")
        return
    refused = _refused(key)
    listed = {item["id"] for item in items}
    for approval_id in [i for i in refused if i not in listed]:
        # Decided elsewhere first (or expired): the card is gone, the reason must not be.
        what, why = refused.pop(approval_id)
        st.error(f"{what} was not decided: {why}")
    if not items:
        st.info("No call waits for a decision.")
        return
    newest = f" (the newest {limit})" if len(items) == limit else ""
    st.caption(f"{len(items)} {'call waits' if len(items) == 1 else 'calls wait'}{newest}")
    now = datetime.now(UTC)
    for item in items:
        _card(source, item, key=key, now=now)


def _card(source: Source, item: dict[str, Any], *, key: str, now: datetime) -> None:
    at = f"{key}:{item['id']}"
    if item.get("truncated"):  # the listing cut long arguments: an edit starts from them whole
        with contextlib.suppress(SignoffError):  # else shown as listed, and said so below
            item = source.approval(item["id"])
    args = json.dumps(item["args"], indent=2, ensure_ascii=False)
    if st.session_state.get(f"{at}:version") != item.get("version"):
        # The call changed since the card was last drawn: the edit box starts from it as it is.
        st.session_state[f"{at}:version"] = item.get("version")
        st.session_state[f"{at}:args"] = args
    with st.container(border=True):
        server = f" · {_md(item['server'])}" if item.get("server") else ""
        st.markdown(f"**{_md(item['tool'])}**{server}")
        st.caption(" · ".join(_md(fact) for fact in _facts(item, now)))
        if item.get("reason"):
            st.markdown(f"**Why it asks:** {_md(item['reason'])}")
        asked = _run_input(source, item, key)
        if asked:
            st.markdown(f"**The run was asked:** {_md(asked)}")
        editor = edited_by(item)
        if editor is not None:
            st.markdown(f"**Edited by {_md(editor)}:** these arguments run")
        question = item.get("kind") == "question" and isinstance(item["args"], dict)
        if question:
            st.markdown(f"**Question:** {_md(str(item['args'].get('question', '')))}")
        else:
            st.code(args, language="json")
        if editor is not None:
            st.markdown("**As requested:**")
            requested = json.dumps(item.get("requested_args"), indent=2, ensure_ascii=False)
            st.code(requested, language="json")
        if item.get("quorum"):
            st.markdown(f"**Approvals so far:** {_md(approvals_so_far(item))}")
        if item.get("truncated"):
            st.caption("Long arguments are shortened here.")
        # Always there, so that an error appearing moves nothing: the open tab stays open.
        slot = st.empty()
        if item["id"] in _refused(key):
            slot.error(f"Not decided: {_refused(key)[item['id']][1]}")
        if question:
            question_actions(item["args"], at=at, button=partial(_button, source, item, key, at))
        else:
            _actions(source, item, at=at, key=key, args=args)


def _button(
    source: Source, item: dict[str, Any], key: str, at: str,
    label: str, name: str, decision: Callable[[], Decision], **style: Any,
) -> None:  # fmt: skip
    """A button of the card of `item` that takes `decision` when clicked."""
    st.button(label, key=f"{at}:{name}", on_click=_take,
              args=(source, item, key, decision), **style)  # fmt: skip


def _actions(source: Source, item: dict[str, Any], *, at: str, key: str, args: str) -> None:
    button = partial(_button, source, item, key, at)

    # Neither is the theme's primary button: its colour (red by default) would make Approve
    # read as the dangerous one. Reject is red in its own words, whatever the theme.
    button("Approve", "approve", Approve, icon=":material/check:")
    # Reject opens first: the arguments are shown just above, an edit box would repeat them.
    reject, edit, respond, always = st.tabs(["Reject", "Edit", "Respond", "Approve always"])
    with reject:
        st.text_input("Reason (the agent's model reads it)", key=f"{at}:reason")
        button(":red[Reject]", "reject", partial(_reject, at), icon=":material/block:")
    with edit:
        st.text_area("Arguments (JSON)", key=f"{at}:args")
        button("Run with these arguments", "edit", partial(_edit, at))
    with respond:
        st.text_area("Answer the agent instead of running the call", key=f"{at}:content")
        button("Send the answer", "respond", partial(_respond, at))
    with always:
        scopes = [
            s for s, (field, _) in _SCOPES.items()
            if not field or (item.get(field) and (s not in ("run", "thread")
                                                  or item.get("requested_by")))
        ]  # fmt: skip
        st.radio("From now on, let this agent's calls of this tool through without asking in",
                 scopes, key=f"{at}:scope", format_func=lambda s: _SCOPES[s][1],
                 index=scopes.index("thread") if "thread" in scopes else 0,
                 horizontal=True)  # fmt: skip
        st.checkbox("For any arguments (unticked: only with exactly these)", key=f"{at}:any_args")
        button("Approve always", "always", partial(_always, at))


def _take(source: Source, item: dict[str, Any], key: str, decision: Callable[[], Decision]) -> None:
    """A button's callback: take the decision before the app renders again."""
    st.session_state[f"{key}:done"] = None  # what the last click did, and only that, shows
    refused = _refused(key)
    refused.pop(item["id"], None)
    try:
        # Made on the call as its card showed it: refused if it changed since.
        # (The card drawn next shows it as it is now, under what changed.)
        decided = source.decide(item["id"], decision(), version=item.get("version"))
    except (SignoffError, ValueError) as exc:
        refused[item["id"]] = (item["tool"], str(exc))
        return
    words = _DONE.get(decided["status"], decided["status"].capitalize())
    grant = ""
    scope = (decided.get("decision") or {}).get("always")
    if scope:
        args = "with these arguments" if scope["with_args"] else "with any arguments"
        grant = f", and from now on its calls {args} in {_SCOPES[scope['scope']][1]}"
    st.session_state[f"{key}:done"] = f"{words} {item['tool']}{grant}, as {decided['decided_by']}."


def _refused(key: str) -> dict[str, tuple[str, str]]:
    """The decisions this session tried and the server refused: approval id to (tool, why)."""
    refused: dict[str, tuple[str, str]] = st.session_state.setdefault(f"{key}:refused", {})
    return refused


def _edit(at: str) -> Edit:
    text = st.session_state[f"{at}:args"]
    try:
        args = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"the arguments are not JSON: {exc}") from None
    if not isinstance(args, dict):
        raise ValueError('the arguments must be a JSON object, like {"name": "value"}')
    return Edit(args=args)


def _respond(at: str) -> Respond:
    return Respond(content=st.session_state[f"{at}:content"])


def _reject(at: str) -> Reject:
    return Reject(reason=st.session_state[f"{at}:reason"])


def _always(at: str) -> Approve:
    scope = st.session_state[f"{at}:scope"]
    return Approve(always=Scope(kind=scope, with_args=not st.session_state[f"{at}:any_args"]))


def _run_input(source: Source, item: dict[str, Any], key: str) -> str | None:
    """What the run was asked, read once per run and session."""
    run_id = item.get("run_id")
    if not run_id:
        return None
    known: dict[str, str | None] = st.session_state.setdefault(f"{key}:inputs", {})
    if run_id not in known:
        try:
            known[run_id] = source.run_input(run_id)
        except SignoffError:
            return None  # asked again at the next render
    return known[run_id]


def _facts(item: dict[str, Any], now: datetime) -> list[str]:
    facts = [f"agent {item['agent']}"] if item.get("agent") else []
    if item.get("requested_by"):
        facts.append(f"started by {item['requested_by']}")
    if item.get("rule"):
        facts.append(f"rule {item['rule']}")
    if item.get("requested_at"):
        facts.append(f"asked {_span(now - datetime.fromisoformat(item['requested_at']))} ago")
    if item.get("expires_at"):
        left = datetime.fromisoformat(item["expires_at"]) - now
        facts.append(f"expires in {_span(left)}" if left.total_seconds() > 0 else "expired")
    if item.get("version"):
        facts.append(f"version {item['version']}")
    return facts


def _span(delta: timedelta) -> str:
    seconds = max(int(delta.total_seconds()), 0)
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")]
    shown = [f"{n}{unit}" for n, unit in parts if n][:2]
    return " ".join(shown) or "0s"


def _md(text: str) -> str:
    """`text` shown as written: the agent's words never become links, images or markup."""
    return _MARKDOWN.sub(r"\\\1", text)
