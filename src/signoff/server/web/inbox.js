// The inbox: every pending approval across runs and agents, newest first, filtered by agent,
// tool and run — or those assigned to me — live through the stream of approval changes: every
// approval held, edited, voted on, handed on, escalated, judged again or decided, whoever holds
// it (a run of signoff's, another framework, the MCP gateway), each card redrawn in place. One
// stream a tab: a browser opens six connections to a server at most, for all its tabs.

import { follow, get, query } from "./api.js";
import { keptCard } from "./cards.js";
import { clear, debounce, guarded, h } from "./dom.js";
import { chatBox } from "./runs.js";

export function inbox(main, app, params) {
  const filters = {
    agent: params.get("agent") || "",
    tool: params.get("tool") || "",
    run_id: params.get("run") || "",
    assigned: params.get("assigned") === "me" ? "me" : "",
  };
  const list = h("section.cards", { "aria-live": "polite", id: "inbox-list" });
  const count = h("span.count", { id: "inbox-count" });
  const cards = new Map();
  const context = { schemaFor: app.schemaFor, changed: () => refresh(), showRun: true };

  // The filters offer the server's own agents and tools, and every agent and tool approvals
  // here name: other frameworks' apps on this database and the MCP gateway hold calls under
  // agents and tools the server does not run. Each page read adds any new one.
  const agentSelect = h("select", { name: "agent", "aria-label": "agent" }, h("option", { value: "" }, "all agents"));
  const toolSelect = h("select", { name: "tool", "aria-label": "tool" }, h("option", { value: "" }, "all tools"));
  offer(agentSelect, [filters.agent, ...app.agents.map((a) => a.path)]);
  offer(toolSelect, [filters.tool, ...app.agents.flatMap((a) => a.tools.map((t) => t.name))]);
  agentSelect.value = filters.agent;
  toolSelect.value = filters.tool;
  guarded(async () => {
    const found = await get("/approvals/catalog");
    offer(agentSelect, found.agents);
    offer(toolSelect, found.tools);
  }, "The filters' agents and tools did not load")();
  const runInput = h("input", { name: "run", type: "search", placeholder: "run id", value: filters.run_id, "aria-label": "run" });
  const assignedSelect = h(
    "select",
    { name: "assigned", "aria-label": "assigned" },
    h("option", { value: "" }, "everything waiting"),
    h("option", { value: "me", selected: filters.assigned === "me" }, "assigned to me"),
  );
  const onFilter = () => {
    filters.agent = agentSelect.value;
    filters.tool = toolSelect.value;
    filters.run_id = runInput.value.trim();
    filters.assigned = assignedSelect.value;
    const shown = query({ agent: filters.agent, tool: filters.tool, run: filters.run_id, assigned: filters.assigned });
    history.replaceState(null, "", `#/${shown}`);
    refresh();
  };
  agentSelect.addEventListener("change", onFilter);
  toolSelect.addEventListener("change", onFilter);
  runInput.addEventListener("change", onFilter);
  assignedSelect.addEventListener("change", onFilter);

  clear(
    main,
    h("h1", {}, "Inbox ", count),
    h("div.filters", {}, assignedSelect, agentSelect, toolSelect, runInput),
    list,
    h("h2", {}, "Start a run"),
    chatBox(app),
  );

  let generation = 0;
  const refresh = guarded(load, "The inbox did not load");
  async function load() {
    const mine = ++generation;
    const page = await get(`/approvals${query({ status: "pending", limit: 500, agent: filters.agent, tool: filters.tool, run_id: filters.run_id, assigned: filters.assigned })}`);
    if (mine !== generation) return; // a newer refresh is on its way
    const seen = new Set();
    const ordered = page.items.map((approval) => keptCard(approval, cards, seen, context));
    for (const [id, card] of cards) {
      if (!seen.has(id)) {
        card.remove();
        cards.delete(id);
      }
    }
    ordered.forEach((card, i) => {
      if (list.children[i] !== card) list.insertBefore(card, list.children[i] || null);
    });
    offer(agentSelect, page.items.map((a) => a.agent));
    offer(toolSelect, page.items.map((a) => a.tool));
    count.textContent = `(${page.items.length} pending)`;
    if (!page.items.length) clear(list, h("p.empty", {}, "Nothing is waiting for you."));
    else list.querySelector("p.empty")?.remove();
    app.cardsChanged();
  }

  const soon = debounce(refresh, 20);
  // {id, version, status} of each approval changed: one decided (here or elsewhere) is out of
  // the inbox at once, before the refresh; a card not at that version is read again with it.
  const stop = follow("/approvals/changes", (event) => {
    if (event.type !== "approval") return;
    const { id, version, status } = event.data;
    const card = cards.get(id);
    if (status === "pending" ? card?._approval.version === version : !card) return;
    if (card && status !== "pending") {
      card.remove();
      cards.delete(id);
    }
    soon();
  }, { onOpen: soon });
  refresh();
  return stop;
}

// Add to `select` an option for each of `names` it lacks (none for an empty one), in order
// after its first ("all …"), leaving the one chosen as it is.
function offer(select, names) {
  const offered = new Set([...select.options].map((o) => o.value));
  for (const name of names) {
    if (!name || offered.has(name)) continue;
    offered.add(name);
    const after = [...select.options].slice(1).find((o) => o.value > name);
    select.insertBefore(h("option", { value: name }, name), after || null);
  }
}
