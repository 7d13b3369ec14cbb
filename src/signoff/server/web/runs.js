// The runs page (newest first) and the chat box that starts a run on any agent.

import { follow, get, post, query } from "./api.js";
import { clear, debounce, guarded, h, notify, when } from "./dom.js";

// What the demo's agents understand (their scripted model follows patterns): the box's example.
const EXAMPLES = {
  files: "list files then write hello to notes.txt",
  ops: "list pods then delete nginx-7d4b9",
};

// The box's hint for the agent it will run: an example it understands, or what it does.
function hint(agent) {
  if (!agent) return "Ask an agent…";
  const example = /scripted/i.test(agent.model) ? EXAMPLES[agent.path] : null;
  if (example) return `Ask ${agent.path}, e.g. "${example}"`;
  return agent.description ? `Ask ${agent.path} — ${agent.description}` : `Ask ${agent.path}…`;
}

export function chatBox(app, { agent = null, thread = null } = {}) {
  const roots = app.agents.filter((a) => !a.path.includes("/"));
  if (!roots.length) {
    return h(
      "p.empty.no-agents",
      {},
      "This server runs no agents, so there is none to start here. Serve yours with ",
      h("code", {}, "signoff serve --agents module:agents"),
      " (see docs/server.md); calls that other apps hold here — a framework's runs, the MCP gateway — still come to this inbox.",
    );
  }
  const select = h(
    "select",
    { name: "agent", "aria-label": "agent to run", disabled: Boolean(agent) },
    roots.map((a) => h("option", { value: a.path, selected: a.path === agent }, `${a.path} — ${a.model}`)),
  );
  const input = h("textarea", { name: "input", rows: 2, required: true, "aria-label": "message" });
  // The hint follows the agent chosen.
  const chosen = () => roots.find((a) => a.path === select.value);
  const retitle = () => {
    input.placeholder = thread ? "Continue this conversation…" : hint(chosen());
  };
  select.addEventListener("change", retitle);
  retitle();
  const send = h("button.primary", { type: "submit" }, thread ? "Send" : "Start run");
  const form = h("form.chat", {}, select, input, send);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!input.value.trim()) return;
    send.disabled = true;
    try {
      const threadId = thread || newThreadId();
      const run = await post(`/threads/${encodeURIComponent(threadId)}/runs`, { agent: select.value, input: input.value });
      input.value = "";
      location.hash = `#/runs/${encodeURIComponent(run.id)}`;
    } catch (error) {
      notify(error.message, "error");
    } finally {
      send.disabled = false;
    }
  });
  // Enter sends, Shift+Enter is a new line.
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  return form;
}

// crypto.randomUUID needs a secure context; a server on a LAN address over HTTP is not one.
function newThreadId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `web-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export function runs(main, app) {
  const body = h("tbody");
  clear(
    main,
    h("h1", {}, "Runs"),
    chatBox(app),
    h("table.runs", {}, h("thead", {}, h("tr", {}, ["Started", "Agent", "Asked", "Status", "Thread", "By"].map((t) => h("th", {}, t)))), body),
  );
  const refresh = guarded(load, "The runs did not load");
  async function load() {
    const page = await get(`/runs${query({ limit: 100 })}`);
    clear(
      body,
      page.items.map((run) =>
        h(
          "tr",
          { dataset: { runId: run.id } },
          h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(run.id)}` }, when(run.created_at))),
          h("td", {}, run.agent, run.parent_id ? h("span.muted", {}, " (sub-agent)") : null),
          h("td.asked", { title: run.input || "" }, run.input || ""),
          h("td", {}, h(`span.badge.run-${run.status}`, {}, run.status)),
          h("td.mono", {}, run.thread_id),
          h("td", {}, run.started_by || ""),
        ),
      ),
    );
    if (!page.items.length) clear(body, h("tr", {}, h("td", { colSpan: 6 }, "No runs yet.")));
  }
  const soon = debounce(refresh, 50);
  const stop = follow("/events", (event) => {
    if (["paused", "completed", "failed", "resumed", "text"].includes(event.type)) soon();
  });
  refresh();
  return stop;
}
