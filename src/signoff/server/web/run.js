// A run: the thread's earlier runs (a conversation continued), then its own conversation, each
// tool call a card whose badge reads pending / approved / edited / responded / rejected /
// expired / blocked / ran, "Approve All" over a turn's pending calls, and the run's events
// keeping it live. Everything is rebuilt from the server, so a reload shows
// exactly the same state.

import { follow, get, query } from "./api.js";
import { approveAllButton, badge, fill, keptCard } from "./cards.js";
import { transcript } from "./conversation.js";
import { clear, debounce, guarded, h, jsonView, when } from "./dom.js";
import { chatBox } from "./runs.js";

export function runView(main, app, runId) {
  const header = h("div.run-header");
  const earlier = h("section.earlier", { id: "earlier" });
  const conversation = h("section.conversation", { id: "conversation" });
  const deeper = h("section.subagents", { id: "subagents" });
  const footer = h("div.run-footer");
  const cards = new Map(); // approval id -> card, kept across refreshes
  const context = { schemaFor: app.schemaFor, changed: () => soon(), showRun: false };
  clear(main, header, earlier, conversation, deeper, footer);

  // A sub-agent's approvals belong to the root run of its tree, under the agent's path: where
  // this run sits in its tree is found once (it never changes).
  let place = null;
  async function locate(run) {
    let root = run;
    let path = run.agent;
    while (root.parent_id) {
      root = await get(`/runs/${encodeURIComponent(root.parent_id)}`);
      path = `${root.agent}/${path}`;
    }
    return { root: root.id, path };
  }

  let generation = 0;
  const refresh = guarded(load, "The run did not load");
  async function load() {
    const mine = ++generation;
    const reading = get(`/runs/${encodeURIComponent(runId)}`);
    place = place || (await locate(await reading));
    const [run, approvals] = await Promise.all([
      reading,
      get(`/approvals${query({ run_id: place.root, limit: 500 })}`),
    ]);
    if (mine !== generation) return;
    const below = approvals.items.filter((a) => a.agent?.startsWith(`${place.path}/`));
    const own = approvals.items.filter((a) => a.agent === place.path || (!a.agent && !run.parent_id));
    const byCall = new Map(own.map((a) => [a.call_id, a]));
    const results = new Map(
      run.messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m]),
    );
    const agent = app.agents.find((a) => a.path === place.path);
    clear(
      header,
      h("h1", {}, `Run of `, h("span.agent", {}, place.path), " ", h(`span.badge.run-${run.status}`, { id: "run-status" }, run.status)),
      h(
        "div.meta",
        {},
        h("span", {}, "model ", h("b.model", {}, agent ? agent.model : "?")),
        h("span", {}, "thread ", h("code", {}, run.thread_id)),
        run.started_by ? h("span", {}, `started by ${run.started_by}`) : null,
        h("span", {}, `started ${when(run.created_at)}`),
        run.parent_id ? h("a", { href: `#/runs/${encodeURIComponent(run.parent_id)}` }, "parent run") : null,
      ),
    );
    clear(
      earlier,
      (run.earlier || []).map((before) =>
        h(
          "div.earlier-run",
          { dataset: { runId: before.id } },
          h("a.muted", { href: `#/runs/${encodeURIComponent(before.id)}` }, `run of ${when(before.created_at)} · ${before.status}`),
          transcript(before.messages, { agent: before.agent }),
        ),
      ),
    );
    const seen = new Set();
    clear(
      conversation,
      run.messages
        .filter((m) => m.role !== "tool" && m.role !== "system")
        .map((message) => turn(message, byCall, results, cards, seen, context)),
    );
    const pending = below.filter((a) => a.status === "pending");
    clear(
      deeper,
      below.length ? h("h2", {}, "Calls of its sub-agents") : null,
      approveAllButton(pending, context),
      below.map((approval) => keptCard(approval, cards, seen, context)),
    );
    for (const id of cards.keys()) if (!seen.has(id)) cards.delete(id);
    const ended = run.status === "completed" || run.status === "failed";
    // Made once: a refresh after the run ended (its last events) must not wipe what the
    // person has started typing to continue the conversation.
    if (!ended || run.parent_id) clear(footer);
    else if (!footer.firstChild) clear(footer, chatBox(app, { agent: run.agent, thread: run.thread_id }));
    app.cardsChanged();
  }

  const soon = debounce(refresh, 15);
  const stop = follow(`/runs/${encodeURIComponent(runId)}/events`, (event) => {
    if (event.type === "decision") decidedElsewhere(cards, event.data, context);
    soon();
  }, { once: true });
  refresh();
  return stop;
}

// A decision event carries the new status: the card shows it at once, before the refresh.
function decidedElsewhere(cards, event, context) {
  const card = cards.get(event.data.approval_id);
  if (!card || card.dataset.status === event.data.status) return;
  const { status, decision, decided_by } = event.data;
  fill(card, { ...card._approval, status, decision, decided_by, decided_at: event.at }, context);
}

function turn(message, byCall, results, cards, seen, context) {
  const who = message.role === "user" ? "user" : "assistant";
  const calls = message.tool_calls || [];
  const pending = calls.map((c) => byCall.get(c.id)).filter((a) => a && a.status === "pending");
  return h(
    `div.message.${who}`,
    {},
    message.content ? h("div.bubble", {}, h("span.who", {}, who === "user" ? "you" : "agent"), message.content) : null,
    approveAllButton(pending, context),
    calls.map((call) => toolCard(call, byCall.get(call.id), results.get(call.id), cards, seen, context)),
  );
}

function toolCard(call, approval, result, cards, seen, context) {
  let card;
  if (approval) {
    card = keptCard(approval, cards, seen, context);
  } else {
    const status = result ? (blocked(result) ? "blocked" : "allowed") : "running";
    card = h(
      `article.card.tool.status-${status}`,
      { dataset: { callId: call.id, status, tool: call.name } },
      h("header", {}, h("span.tool", {}, call.name), badge(status)),
      jsonView(call.args),
    );
  }
  card.querySelector(".result")?.remove();
  // A response is the result: the card says it once, as the decision.
  if (result && approval?.status !== "responded") card.append(resultView(result));
  return card;
}

function blocked(result) {
  try {
    return JSON.parse(result.content).status === "blocked";
  } catch {
    return false;
  }
}

function resultView(message) {
  let body = message.content;
  try {
    body = jsonView(JSON.parse(message.content));
  } catch {
    body = h("pre.text", {}, message.content);
  }
  return h(`div.result${message.is_error ? ".error" : ""}`, {}, h("div.label", {}, message.is_error ? "Error" : "Result"), body);
}
