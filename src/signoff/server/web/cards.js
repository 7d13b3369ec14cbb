// An approval as a card: the tool, what the user asked the run that makes the call, its
// arguments, who asks under which rule, its status badge, and — while it is pending — the
// decisions: approve, edit, respond, reject, approve always for a scope, assign to someone; a
// call that needs several people shows who has approved it and who is still needed, and — edited
// while it waited — both argument sets. Approving and rejecting wait a few seconds (the server's
// `web.undo_seconds`) to be undone; approving or editing a call its rule marks destructive asks
// first. Every decision names the version of the approval its card showed when the person acted
// (versions.js): one the call changed under is refused, and the card says what changed. The inbox,
// the run view and the approval's own page show these, redrawn in place as the approval changes.
// An agent's question to a person is a card of its own kind: answered or declined (question.js).

import { ApiError, get, post, sendOnLeaving } from "./api.js";
import { argsDiff, h, clear, jsonView, notify, timeLeft, when } from "./dom.js";
import { conversationFold } from "./conversation.js";
import { schemaForm } from "./schemaform.js";
import { editPreview, previewView } from "./preview.js";
import { answerView, questionView } from "./question.js";
import { changedSince, editedArgs, isStale, staleNote, versioned } from "./versions.js";

let undoSeconds = 5;

// How long approvals and rejections wait to be undone (0: they are sent at once).
export function setUndoSeconds(seconds) {
  undoSeconds = seconds;
}

const LABELS = {
  pending: "pending",
  approved: "approved",
  edited: "edited",
  responded: "responded",
  answered: "answered",
  rejected: "rejected",
  expired: "expired",
  cancelled: "cancelled",
  blocked: "blocked",
  allowed: "ran (allowed)",
  running: "running",
};

// Decisions waiting out their undo window, by approval id, until the server has answered; an
// Approve All's calls share one: {ids, seen: {id: version}, verb, noun, detail, path, body,
// deadline, timer, sent, fire(), undo(), drop()}. Once sent, a decision can be neither undone
// nor sent again.
const waiting = new Map();

export function badge(status) {
  return h(`span.badge.status-${status}`, { dataset: { status } }, LABELS[status] || status);
}

// context: {schemaFor(agent, tool) -> schema|null, changed() -> refresh, showRun: bool (a link
// to where the call belongs), own: bool (on the approval's own page)}
export function approvalCard(approval, context) {
  const card = h("article.card.approval", {
    dataset: { approvalId: approval.id, status: approval.status, tool: approval.tool, origin: approval.origin },
    tabIndex: -1,
  });
  fill(card, approval, context);
  return card;
}

// The approval's card from `cards` (by id, kept across refreshes so its state survives),
// redrawn in place if the approval changed, or a new one; its id goes into `seen`.
export function keptCard(approval, cards, seen, context) {
  seen.add(approval.id);
  let card = cards.get(approval.id);
  if (!card) {
    card = approvalCard(approval, context);
    cards.set(approval.id, card);
  } else {
    update(card, approval, context);
  }
  return card;
}

// Redraw `card` for its approval as it stands now, if that changed what it shows. A decision on it
// still in its undo window, made on an older version (or on a call decided meanwhile), is
// dropped — never sent: the server would refuse it, and the person should see what changed
// before deciding again.
export function update(card, approval, context) {
  if (card.dataset.shown === shownState(approval)) return;
  const held = waiting.get(approval.id);
  const seen = held?.seen[approval.id];
  const moved = seen !== approval.version || approval.status !== "pending";
  if (held && !held.sent && moved && held.drop()) {
    card._stale = `your ${held.noun} waited to be sent while the call was ${changedSince(approval, seen)} (version ${seen}, now ${approval.version}): look again.`;
  }
  fill(card, approval, context);
}

// What a redraw of the card would change: its status and version (an edit, a vote, a hand-over,
// an escalation each make a new one).
function shownState(approval) {
  return JSON.stringify([approval.status, approval.version, (approval.votes || []).map((v) => v.by), approval.assigned, approval.escalated]);
}

function cardOf(id) {
  return document.querySelector(`article.approval[data-approval-id="${CSS.escape(id)}"]`);
}

// "Approve All (N)" over several pending approvals; nothing for fewer than two.
export function approveAllButton(listed, context) {
  const pending = listed.filter((a) => a.kind !== "question"); // a question is answered, one by one
  if (pending.length < 2) return null;
  const batch = waiting.get(pending[0].id);
  if (batch && batch.ids.length > 1) return undoBar(batch); // one bar for the batch
  return h(
    "button.primary.approve-all",
    { type: "button", dataset: { action: "approve-all" }, onclick: () => approveAll(pending, context) },
    `Approve All (${pending.length})`,
  );
}

// Where a call held outside signoff's own runs comes from: the channels of signoff itself, and
// the frameworks whose runs hold their calls here (an origin not listed shows as it is).
const CHANNELS = { "mcp-gateway": "the MCP gateway", gate: "the gate" };
const FRAMEWORKS = {
  langgraph: "LangGraph",
  langchain: "LangChain",
  "pydantic-ai": "Pydantic AI",
  "openai-agents": "OpenAI Agents SDK",
  "google-adk": "Google ADK",
  agno: "Agno",
  adalflow: "AdalFlow",
  "agent-framework": "Microsoft Agent Framework",
  strands: "Strands Agents",
  "llama-index": "LlamaIndex",
  crewai: "CrewAI",
};

// Another framework's call: no run of signoff's, but that framework's thread and agent.
function external(approval) {
  return approval.origin !== "runtime" && !(approval.origin in CHANNELS);
}

// Redraw `card` for `approval` (its new status after a decision or an event).
export function fill(card, approval, context) {
  const selected = card.classList.contains("selected");
  card.dataset.status = approval.status;
  card.dataset.shown = shownState(approval);
  card.className = `card approval status-${approval.status}`;
  // A decision in its undo window: the card is not pending any more for the keyboard.
  card.classList.toggle("waiting", waiting.has(approval.id));
  card.classList.toggle("selected", selected);
  card._approval = approval; // what the keyboard shortcuts act on
  card._context = context;
  const left = approval.status === "pending" ? timeLeft(approval.expires_at) : null;
  clear(
    card,
    h(
      "header",
      {},
      kindOf(approval) ? h("span.kind", {}, kindOf(approval)) : null,
      h("span.tool", {}, approval.tool),
      approval.server ? h("span.server", {}, `on ${approval.server}`) : null,
      badge(approval.status),
      left ? h("span.deadline", { dataset: { expiresAt: approval.expires_at } }, left) : null,
      left && approval.on_timeout ? h("span.on-timeout", {}, `then ${approval.on_timeout.decide === "approve" ? "approved" : "rejected"} by signoff`) : null,
    ),
    h(
      "div.meta",
      {},
      external(approval) ? null : h("span", {}, "agent ", h("b.agent", {}, approval.agent || "—")),
      h("span", {}, "rule ", h("code.rule", {}, approval.rule || "default")),
      approval.reason ? h("span.reason", {}, approval.reason) : null,
      h("span", {}, `asked ${when(approval.requested_at)}`),
      origin(approval, context),
      place(approval, context),
    ),
    approval.status === "pending" && card._stale ? staleNote(card._stale) : null,
    context.showRun ? asked(approval) : null,
    external(approval) && !context.own ? conversationFold(approval) : null,
    approval.kind === "question"
      ? questionView(card, approval, asking(card, context))
      : [approval.status === "pending" && approval.edited ? editedArgs(approval) : jsonView(approval.args), previewView(approval.preview)],
    approval.truncated ? wholeLink(card, approval, context) : null,
    approval.status === "pending" ? waitingOn(approval) : null,
    decided(approval),
    approval.status === "pending" ? actions(card, approval, context) : null,
  );
}

// While it waits: who has approved a call that needs several people and who is still needed,
// whom it was handed to, and whom it has escalated to.
function waitingOn(approval) {
  const lines = [];
  if (approval.quorum) {
    const votes = approval.votes || [];
    const needed = approval.needed || { people: approval.quorum.count - votes.length, roles: [] };
    const roles = needed.roles.length ? `, one each with the roles ${needed.roles.join(", ")}` : "";
    lines.push(
      h(
        "div.quorum",
        { dataset: { approvedBy: votes.map((v) => v.by).join(","), needed: needed.people } },
        h("b", {}, `Needs ${approval.quorum.count} people. `),
        votes.length ? `Approved by ${votes.map((v) => v.by).join(", ")}; ` : "Nobody has approved yet; ",
        `${needed.people} more needed${roles}.`,
      ),
    );
  }
  if (approval.assigned) {
    const a = approval.assigned;
    lines.push(
      h(
        "div.assigned",
        { dataset: { assignedTo: a.to } },
        "Assigned to ",
        h("b", {}, a.to.startsWith("role:") ? `everyone with the role ${a.to.slice(5)}` : a.to),
        ` by ${a.by}, ${when(a.at)}`,
        a.note ? [": ", h("q.note", {}, a.note)] : null,
      ),
    );
  }
  if (approval.escalated) {
    const roles = approval.escalate.slice(0, approval.escalated).flatMap((step) => step.to);
    lines.push(h("div.escalated", {}, `Escalated to ${roles.join(", ")}: nobody decided in time.`));
  }
  return lines.length ? h("div.waiting-on", {}, lines) : null;
}

// What the user asked the run that made the call (where the run's conversation is not beside
// the card): the person who started it, and their words.
function asked(approval) {
  if (!approval.input) return null;
  return h(
    "div.asked",
    { title: approval.input },
    h("span.asker", {}, approval.requested_by || "the user"),
    " asked ",
    h("q.input", {}, approval.input),
  );
}

// Whose call it is: another framework's thread and agent, or who made it through the MCP
// gateway (or the gate, in process); for a run's call, who started the run (unless the card
// says it with what they asked, or shows the run itself).
function origin(approval, context) {
  if (external(approval)) {
    return [
      h(
        "span.origin",
        {},
        approval.thread_id ? ["thread ", h("b.thread", {}, approval.thread_id), " · "] : null,
        approval.agent ? ["agent ", h("b.agent", {}, approval.agent), " · "] : null,
        `via ${FRAMEWORKS[approval.origin] || approval.origin}`,
      ),
      approval.requested_by ? h("span.requested-by", {}, `from ${approval.requested_by}`) : null,
    ];
  }
  if (approval.run_id) {
    if (!context.showRun || approval.input || !approval.requested_by) return null; // said already
    return h("span.requested-by", {}, `from ${approval.requested_by}`);
  }
  return h("span.origin", {}, `from ${approval.requested_by || "—"} via ${CHANNELS[approval.origin] || approval.origin}`);
}

// Where to see more: the run that holds the call, or — when no run does — the approval's own page.
function place(approval, context) {
  if (!context.showRun) return null;
  if (approval.run_id) return h("a.run-link", { href: `/#/runs/${encodeURIComponent(approval.run_id)}` }, "open run");
  if (context.own) return null;
  return h("a.approval-link", { href: `#/approvals/${encodeURIComponent(approval.id)}` }, "open approval");
}

function decided(approval) {
  const d = approval.decision;
  if (!d) return null;
  const by = approval.automatic
    ? " by signoff: nobody decided in time, and the rule says so"
    : approval.decided_by
      ? ` by ${approval.decided_by}`
      : "";
  const parts = [h("div", { className: approval.automatic ? "automatic" : "" }, `${LABELS[approval.status] || approval.status}${by}, ${when(approval.decided_at)}`)];
  if (approval.votes?.length > 1) parts.push(h("div.votes", {}, `Approved by ${approval.votes.map((v) => v.by).join(", ")}`));
  if (d.reason) parts.push(h("div.decision-reason", {}, `Reason: ${d.reason}`));
  if (d.content) parts.push(h("div.decision-content", {}, `Response: ${d.content}`));
  if (d.kind === "answer") parts.push(answerView(d.value));
  if (approval.edited) {
    // Both argument sets are kept: what the model asked for, and what ran.
    parts.push(h("div", {}, "Edited: the arguments above ran, in place of the requested ones"), argsDiff(approval.requested_args, approval.args));
  }
  if (d.always) parts.push(h("div", {}, `Always, for this ${d.always.scope}, ${d.always.with_args ? "with these arguments" : "with any arguments"}`));
  return h("div.decision", {}, parts);
}

// A listing cuts long arguments: the whole approval is a click away (and an edit starts from it).
function wholeLink(card, approval, context) {
  const link = h("button.link.whole-args", { type: "button", dataset: { action: "whole" } }, "Long arguments are cut here: show them all");
  link.addEventListener("click", async () => {
    try {
      fill(card, await whole(approval), context);
    } catch (error) {
      notify(error.message, "error");
    }
  });
  return link;
}

async function whole(approval) {
  return approval.truncated ? get(`/approvals/${encodeURIComponent(approval.id)}`) : approval;
}

function actions(card, approval, context) {
  const held = waiting.get(approval.id);
  if (held && held.ids.length > 1) return h("div.actions.batched", { role: "status" }, "Approved with the others of its turn: Undo is beside them");
  if (held) return undoBar(held);
  const button = (action, text, onclick, title) =>
    h(`button.${action === "approve" ? "primary" : action === "reject" ? "danger" : "secondary"}`, {
      type: "button",
      dataset: { action },
      title,
      onclick,
    }, text);
  if (approval.kind === "question") {
    return h(
      "div.actions",
      {},
      button("reject", "Decline", () => rejectDialog(card, approval, context, { verb: "Decline", title: "Decline the question" }), "Decline with a reason: the agent is told"),
      button("assign", "Assign to…", () => assignDialog(card, approval, context), "Hand it to a person or a role, with a note"),
    );
  }
  return h(
    "div.actions",
    {},
    button("approve", "Approve", () => approve(card, approval, context), "Approve (Enter)"),
    button("edit", "Edit", () => editDialog(card, approval, context), "Edit the arguments (Ctrl/Cmd+E)"),
    button("respond", "Respond", () => respondDialog(card, approval, context), "Answer the agent with text instead"),
    button("reject", "Reject", () => rejectDialog(card, approval, context), "Reject with a reason"),
    // A call that needs several people is approved one person at a time: no grant.
    approval.quorum ? null : button("always", "Approve always…", () => alwaysDialog(card, approval, context), "Approve this and later calls like it"),
    button("assign", "Assign to…", () => assignDialog(card, approval, context), "Hand it to a person or a role, with a note"),
  );
}

// What a question's card does with the server's answer to an answer: shows it; after a refusal
// of a version it changed since, says what changed; after someone else's answer, says whose
// (in the inbox, until the next change it hears of takes the decided card away).
function asking(card, context) {
  return {
    answered(updated) {
      card._conflict = null;
      fill(card, updated, context);
      context.changed();
    },
    conflicted(now) {
      notify(card._conflict, "error");
      fill(card, now, context);
    },
    stale: (error) => refused(card, error, context),
  };
}

// Post `body` as the decision on `approval`, on the version the card showed as the person acted;
// `answered` runs once the server has answered, before the card is redrawn. An error other than
// a conflict is returned.
async function send(card, approval, context, body, answered = () => {}) {
  card._stale = null;
  let updated;
  try {
    updated = await post(`/approvals/${encodeURIComponent(approval.id)}/decision`, versioned(approval, body));
  } catch (error) {
    answered();
    if (isStale(error)) {
      await refused(card, error, context);
      return null;
    }
    if (error instanceof ApiError && error.status === 409) {
      notify(`Already decided elsewhere: ${error.message}`, "error");
      context.changed();
      return null;
    }
    return error;
  }
  answered();
  fill(card, updated, context);
  context.changed();
  return null;
}

// The server refused a decision made on a version the call has changed since, writing nothing:
// the card says what changed and shows the call as it stands now. Nothing is sent again by
// itself — the person decides again on what they now see.
async function refused(card, error, context) {
  card._stale = error.body.detail || error.message;
  let now = card._approval;
  try {
    now = await get(`/approvals/${encodeURIComponent(card.dataset.approvalId)}`);
  } catch (failure) {
    notify(`The approval did not load again: ${failure.message}`, "error");
  }
  fill(card, now, context);
  context.changed();
}

// Approve (the button, Enter): an error is told, whether it comes back at once or after the
// undo window.
export async function approve(card, approval, context) {
  const error = await approving(card, approval, context);
  if (error) notify(error.message, "error");
}

async function approving(card, approval, context, always = null) {
  if (waiting.has(approval.id)) return null; // Undo first
  if (!always && approval.destructive && !(await confirmed(card, [approval]))) return null;
  const body = always ? { kind: "approve", always } : { kind: "approve" };
  return decideLater(card, approval, context, body, always ? "Approving always" : "Approving");
}

// "Approve All": every pending call of the turn at once (all or nothing), after one undo window,
// each on the version its card shows as the button is pressed.
export async function approveAll(listed, context) {
  const approvals = listed.map((a) => cardOf(a.id)?._approval || a);
  if (approvals.some((a) => waiting.has(a.id))) return;
  const risky = approvals.filter((a) => a.destructive);
  if (risky.length && !(await confirmed(null, risky))) return;
  const decisions = Object.fromEntries(approvals.map((a) => [a.id, versioned(a, { kind: "approve" })]));
  const ids = approvals.map((a) => a.id);
  for (const id of ids) if (cardOf(id)) cardOf(id)._stale = null;
  const redraw = () => {
    for (const card of document.querySelectorAll("article.approval")) {
      if (ids.includes(card.dataset.approvalId)) fill(card, card._approval, card._context);
    }
    context.changed();
  };
  await later(ids, {
    seen: Object.fromEntries(approvals.map((a) => [a.id, a.version])),
    verb: `Approving ${ids.length} calls`,
    noun: "Approve All",
    path: "/approvals/decisions",
    body: { decisions },
    redraw,
    undone: "Approve All undone",
    async go(answered) {
      try {
        await post("/approvals/decisions", { decisions });
        answered();
      } catch (error) {
        answered();
        // All or nothing: none was decided. The call that changed says what changed.
        const changed = isStale(error) ? cardOf(error.body.approval_id) : null;
        if (changed) await refused(changed, error, changed._context);
        notify(isStale(error) ? `Approve All was not sent: ${error.message}` : error.message, "error");
        redraw();
      }
      context.changed();
    },
  });
}

// Send `body` as the decision on `approval` — the version the card showed as the person acted,
// whatever it shows by the time it is sent — once its undo window has passed (at once without
// one); an error it gets is returned when sent at once, else told.
function decideLater(card, approval, context, body, verb) {
  card._stale = null;
  return later([approval.id], {
    seen: { [approval.id]: approval.version },
    verb,
    noun: body.kind === "reject" ? "rejection" : "approval",
    detail: body.reason,
    path: `/approvals/${encodeURIComponent(approval.id)}/decision`,
    body: versioned(approval, body), // as sent when the page is left, too
    redraw: () => fill(card, card._approval, context),
    undone: body.kind === "reject" ? "Rejection undone" : "Approval undone",
    async go(answered) {
      const error = await send(card, approval, context, body, answered);
      if (error && undoSeconds) {
        notify(error.message, "error");
        fill(card, card._approval, context);
      }
      return error;
    },
  });
}

// The one undo window: `go` runs after it unless undone (and at once without one). Sent, the
// decision shows "Sending…" until `go` says the server has answered (`answered()`, before it
// redraws); Undo and Send now do nothing any more.
async function later(ids, entry) {
  if (!undoSeconds) return entry.go(() => {});
  const held = { ...entry, ids, sent: false, deadline: Date.now() + undoSeconds * 1000 };
  const release = () => {
    clearTimeout(held.timer);
    for (const id of ids) if (waiting.get(id) === held) waiting.delete(id);
  };
  const open = () => !held.sent && waiting.get(ids[0]) === held;
  held.fire = () => {
    if (!open()) return null;
    held.sent = true;
    clearTimeout(held.timer);
    entry.redraw();
    return entry.go(release);
  };
  // Dropped unsent (the call changed under it): whether it was still to send.
  held.drop = () => {
    if (!open()) return false;
    release();
    entry.redraw();
    return true;
  };
  held.undo = () => {
    if (held.drop()) notify(entry.undone);
  };
  held.timer = setTimeout(held.fire, undoSeconds * 1000);
  for (const id of ids) waiting.set(id, held);
  entry.redraw();
  return null;
}

function undoBar(held) {
  const kind = held.body.kind === "reject" ? "rejecting" : "approving";
  if (held.sent) return h(`div.actions.undo.sending.${kind}`, { role: "status" }, h("span.sending", {}, "Sending…"));
  const left = () => Math.max(0, Math.ceil((held.deadline - Date.now()) / 1000));
  const count = h("span.countdown", {}, `${held.verb} in ${left()}s`);
  const bar = h(
    `div.actions.undo.${kind}`,
    { role: "status" },
    count,
    held.detail ? h("span.reason", {}, `“${held.detail}”`) : null,
    h("button.primary", { type: "button", dataset: { action: "undo" }, onclick: () => held.undo() }, "Undo"),
    h("button.secondary", { type: "button", dataset: { action: "send-now" }, onclick: () => held.fire() }, "Send now"),
  );
  const tick = setInterval(() => {
    if (!bar.isConnected || held.sent || waiting.get(held.ids[0]) !== held) return clearInterval(tick);
    count.textContent = `${held.verb} in ${left()}s`;
  }, 250);
  return bar;
}

function reject(card, approval, context, reason) {
  return decideLater(card, approval, context, { kind: "reject", reason }, "Rejecting");
}

// Closing the tab does not undo a decision: what is still waiting is sent as the page goes.
addEventListener("pagehide", () => {
  for (const held of new Set(waiting.values())) {
    if (held.sent) continue;
    held.sent = true;
    clearTimeout(held.timer);
    sendOnLeaving(held.path, held.body);
  }
  waiting.clear();
});

// Whether the person confirms approving `approvals`, whose rules mark them destructive — or,
// with `edit` (the edit form open in the dialog), running the one of them with the edited
// arguments: the question takes the form's place, which comes back whatever the answer.
function confirmed(card, approvals, edit = null) {
  const [first] = approvals;
  const title = edit
    ? `Run ${first.tool} with these arguments?`
    : approvals.length > 1
      ? `Approve ${approvals.length} calls?`
      : `Approve ${first.tool}?`;
  const names = [...new Set(approvals.map((a) => a.tool))].join(", ");
  return new Promise((resolve) => {
    const form = dialog(
      card,
      title,
      h(
        "div.confirm",
        {},
        h("p", {}, "The policy marks ", h("code", {}, names), " destructive: once it runs, it cannot be undone."),
        approvals.map((a) => h("p.help", {}, h("code", {}, a.tool), ` under rule `, h("code", {}, a.rule || "default"), a.reason ? ` — ${a.reason}` : "")),
      ),
      edit ? "Run" : approvals.length > 1 ? "Approve all" : "Approve",
      async () => {
        resolve(true);
        return null;
      },
      { danger: true, back: edit, cancelled: () => resolve(false) },
    );
    document.getElementById("dialog").addEventListener("close", () => resolve(false), { once: true });
    form.querySelector("[data-action=cancel]").focus(); // Enter again does not approve
  });
}

// What a dialog's `onSubmit` returns to leave it open as it is (neither closed nor told a problem).
const STAY = Symbol("stay");

// The one <dialog> of the page, filled for each use. Esc closes it (the browser's own).
// Closed, it hands the keyboard back to `card` (where Enter and Ctrl/Cmd+E act), whatever the
// page redrew meanwhile. With `back` (the form it shows), this form only asks on its way:
// done or cancelled, `back` is shown again.
function dialog(card, title, body, submitText, onSubmit, { danger = false, back = null, cancelled = () => {} } = {}) {
  const box = document.getElementById("dialog");
  box.onclose = () => {
    if (card?.isConnected) card.focus({ preventScroll: true });
  };
  const done = () => (back ? clear(box, back) : box.close());
  const problem = h("div.form-error", { role: "alert", hidden: true });
  const submit = h(`button.${danger ? "danger" : "primary"}`, { type: "submit", dataset: { action: "submit" } }, submitText);
  const form = h(
    "form.dialog-form",
    // The server checks the values (and says what is wrong); the browser's own bubbles would
    // stop an out-of-range number before the server could name the rule it breaks.
    { method: "dialog", noValidate: true },
    h("h2", {}, title),
    body,
    problem,
    h(
      "div.dialog-actions",
      {},
      h("button.secondary", {
        type: "button",
        dataset: { action: "cancel" },
        onclick: () => {
          done();
          cancelled();
        },
      }, "Cancel"),
      submit,
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.hidden = true;
    submit.disabled = true;
    try {
      const message = await onSubmit();
      if (message === STAY) return;
      if (message) {
        problem.textContent = message;
        problem.hidden = false;
      } else {
        done();
      }
    } finally {
      submit.disabled = false;
    }
  });
  clear(box, form);
  if (!box.open) box.showModal();
  return form;
}

export async function editDialog(card, approval, context) {
  if (waiting.has(approval.id)) return;
  if (approval.truncated) {
    // Never edit from a cut copy: what is sent back would cut the arguments for real.
    try {
      approval = await whole(approval);
    } catch (error) {
      return notify(error.message, "error");
    }
    fill(card, approval, context);
  }
  // A resource or prompt (through the MCP gateway) has no tool schema here: raw JSON. The
  // schema kept with the approval is the one the server checks the edit against; a call held
  // before its tool's schema was known has the server's own agents' (if it has one).
  const schema = kindOf(approval) ? null : approval.args_schema || context.schemaFor(approval.agent, approval.tool);
  let form = null;
  try {
    form = schema ? schemaForm(schema, approval.args) : null;
  } catch (error) {
    console.warn(`signoff: no form for ${approval.tool}'s schema (${error.message}); raw JSON`);
  }
  const raw = h("textarea.raw-json", { rows: 14, spellcheck: false, "aria-label": "arguments as JSON" });
  const rawPane = h("div.raw-pane", { hidden: Boolean(form) }, raw);
  const formPane = form ? h("div.form-pane", {}, form.element) : null;
  let mode = form ? "form" : "raw";
  raw.value = JSON.stringify(approval.args, null, 2);
  const tabs = form
    ? h(
        "div.tabs",
        { role: "tablist" },
        h("button.tab.active", { type: "button", dataset: { tab: "form" }, onclick: () => switchTo("form") }, "Form"),
        h("button.tab", { type: "button", dataset: { tab: "raw" }, onclick: () => switchTo("raw") }, "Raw JSON"),
      )
    : h("p.help", {}, "No form for this tool's arguments: edit them as JSON.");
  let current = form;
  function switchTo(next) {
    if (next === mode) return;
    if (next === "raw") {
      raw.value = JSON.stringify(current.read(), null, 2);
    } else {
      let parsed;
      try {
        parsed = JSON.parse(raw.value);
      } catch (error) {
        return notify(`Not JSON: ${error.message}`, "error");
      }
      current = schemaForm(schema, parsed);
      clear(formPane, current.element);
    }
    mode = next;
    rawPane.hidden = mode !== "raw";
    formPane.hidden = mode !== "form";
    for (const tab of tabs.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.tab === mode);
  }
  // What the edited arguments would change: shown before they run, where the server can say.
  const preview = editPreview(approval, () => (mode === "raw" ? JSON.parse(raw.value) : current.read()));
  const editForm = dialog(
    card,
    `Edit ${approval.tool}`,
    h("div.edit-body", {}, tabs, formPane, rawPane, preview.element),
    "Run with these arguments",
    async () => {
      let args;
      if (mode === "raw") {
        try {
          args = JSON.parse(raw.value);
        } catch (error) {
          return `Not JSON: ${error.message}`;
        }
      } else {
        current.clearErrors();
        args = current.read();
      }
      if (!(await preview.seen(args))) return STAY;
      // A destructive call asks first, as approving it does: the edit runs it.
      if (approval.destructive && !(await confirmed(card, [approval], editForm))) return STAY;
      const error = await send(card, approval, context, { kind: "edit", args });
      if (!error) return null;
      const body = error.body || {};
      // Said once: beside the field it names, or — with no such field — above the buttons.
      if (mode === "form" && body.path !== undefined && current.showError(body.path, body.detail)) {
        return "Not run: the server refused the field marked above.";
      }
      return body.schema_path ? `${body.detail}` : error.message;
    },
  );
}

export function respondDialog(card, approval, context) {
  const text = h("textarea", { name: "content", rows: 5, required: true, "aria-label": "response", placeholder: "What the agent gets back instead of running the tool" });
  dialog(card, `Respond instead of running ${approval.tool}`, h("label", {}, "Your answer to the agent", text), "Send response", async () => {
    if (!text.value.trim()) return "Write the answer the agent gets.";
    const error = await send(card, approval, context, { kind: "respond", content: text.value });
    return error ? error.message : null;
  });
  text.focus();
}

export function rejectDialog(card, approval, context, { verb = "Reject", title = `${verb} ${approval.tool}` } = {}) {
  const text = h("textarea", { name: "reason", rows: 3, "aria-label": "reason", placeholder: "Why not — the agent is told" });
  dialog(card, title, h("label", {}, "Reason", text), verb, async () => {
    const error = await reject(card, approval, context, text.value.trim());
    return error ? error.message : null;
  }, { danger: true });
  text.focus();
}

// Hand the approval to a person or a role, with a note: they are told, and find it under
// "Assigned to me". The server says who cannot decide it.
export function assignDialog(card, approval, context) {
  const to = h("input", { name: "to", required: true, maxLength: 200, "aria-label": "assign to", placeholder: "a person's name, or role:NAME" });
  const note = h("textarea", { name: "note", rows: 3, maxLength: 2000, "aria-label": "note", placeholder: "What should they look at?" });
  dialog(
    card,
    `Assign ${approval.tool}`,
    h("div", {}, h("label", {}, "To", to), h("label", {}, "Note", note)),
    "Assign",
    async () => {
      if (!to.value.trim()) return "Name a person, or role:NAME.";
      try {
        const updated = await post(`/approvals/${encodeURIComponent(approval.id)}/assign`, { to: to.value.trim(), note: note.value });
        fill(card, updated, context);
        context.changed();
        return null;
      } catch (error) {
        return error.message;
      }
    },
  );
  to.focus();
}

export function alwaysDialog(card, approval, context) {
  // Only the scopes the call has: another framework's call belongs to no run of signoff's. An
  // MCP gateway's "thread" is its asker's exact call (a hash), so it is named for what it covers.
  const gateway = approval.origin === "mcp-gateway";
  // A coding agent's thread is its session, and its agent path names the repository it works in.
  const coding = ["claude-code", "gemini-cli"].includes(approval.origin);
  // A run or thread grant covers only its requester's calls: without one it is not offered.
  const who = approval.requested_by;
  const thread = gateway
    ? `this exact call, when ${who} makes it again`
    : coding
      ? `this session (${approval.thread_id}), when ${who} makes them`
      : `this conversation (thread ${approval.thread_id}), when ${who} makes them`;
  const agent = coding
    ? `this repository (${approval.agent}), in any session, whoever runs the agent`
    : `agent ${approval.agent}, in any run or thread, whoever makes them`;
  // Only a run of signoff's own has a run id, and it can fire there: the run's later turns
  // and its sub-agents make their calls in it. Each message of a conversation starts a new
  // run, so the conversation is the default.
  const scopes = [
    approval.run_id && who ? ["run", `this run only (its later turns and sub-agents), when ${who} makes them`] : null,
    approval.thread_id && who ? ["thread", thread] : null,
    approval.agent ? ["agent", agent] : null,
    ["global", "everywhere, whoever makes them"],
  ].filter(Boolean);
  const preferred = scopes.some(([scope]) => scope === "thread") ? "thread" : scopes[0][0];
  const radios = scopes.map(([scope, text]) =>
    h("label.choice", {}, h("input", { type: "radio", name: "scope", value: scope, checked: scope === preferred }), ` ${text}`),
  );
  const anyArgs = h("input", { type: "checkbox", name: "any_args" });
  dialog(
    card,
    `Approve ${approval.tool} always`,
    h(
      "div",
      {},
      h("p.help", {}, "Later calls of this tool by the same agent, with exactly these arguments, run without asking when the same rule asks about them, within the scope below — never a call you could not approve yourself (your own, where the rule forbids self-approval), none once the rule changes, and none once you no longer hold a role it needs. Grants are listed, and revoked, on the Grants page."),
      h("fieldset.scopes", {}, radios),
      h("label.choice", {}, anyArgs, " for any arguments, not only these"),
      // This dialog is the confirmation a destructive call's approval asks for.
      approval.destructive ? h("p.form-error.destructive", {}, "The policy marks this call destructive: once it runs, it cannot be undone.") : null,
    ),
    "Approve always",
    async () => {
      const scope = document.querySelector("#dialog input[name=scope]:checked").value;
      const error = await approving(card, approval, context, { scope, with_args: !anyArgs.checked });
      return error ? error.message : null;
    },
  );
}

// What a held call that is not a tool call asks for, in words: the MCP gateway's reads and prompts,
// and an agent's question to a person (question.js).
function kindOf(approval) {
  return { resource: "read resource", prompt: "get prompt", question: "question" }[approval.kind] || null;
}
