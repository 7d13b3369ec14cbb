// The insights page: per rule, tool and agent over a window, how many calls asked and how each
// ended, how long a decision took, who decides and how often grants let calls through; then the
// policy changes the decisions suggest, each with its evidence and its diff, and the candidates
// that came nearest, with what each lacks. An admin applies a suggestion with PUT /v1/policy — a
// new, audited policy version like any other change — once they confirm the rule it adds.

import { get, put, query } from "./api.js";
import { clear, h, labelCells, notify } from "./dom.js";

const COLUMNS = ["Rule", "Tool", "Agent", "Asked", "Approved", "Edited", "Responded", "Answered", "Rejected", "Expired", "Time to decide (median / p90)", "Top deciders", "Grant uses"];

export function insightsPage(main, app, params) {
  const days = h("input", { type: "number", name: "days", min: 1, max: 3650, value: params.get("days") || "30", "aria-label": "days" });
  const summary = h("p.help", { id: "insights-summary" });
  const body = h("tbody");
  const table = h("table.insights.stacked", {}, h("thead", {}, h("tr", {}, COLUMNS.map((t) => h("th", {}, t)))), body);
  const suggestions = h("div.suggestions", { id: "suggestions" });
  const form = h("form.filters", {}, h("label", {}, "Last ", days, " days"), h("button", { type: "submit" }, "Show"));
  clear(
    main,
    h("h1", {}, "Insights"),
    h("p.help", {}, "What the decisions teach: how each rule's calls ended, how long people took, who decides. Suggestions are never applied by themselves."),
    form,
    summary,
    table,
    h("h2", {}, "Suggestions"),
    suggestions,
  );

  async function refresh() {
    const found = await get(`/insights${query({ days: days.value })}`);
    clear(summary, `Calls asked since ${new Date(found.since).toLocaleString()} · policy version `, h("code", { id: "insights-policy-version" }, found.policy_version));
    clear(body, found.groups.map(row));
    if (!found.groups.length) clear(body, h("tr", {}, h("td", { colSpan: COLUMNS.length }, "No calls in this window.")));
    labelCells(table);
    clear(suggestions, found.suggestions.map((s) => suggestion(s, found, app, refresh)));
    if (!found.suggestions.length) clear(suggestions, h("p.muted", {}, found.nearest.length ? "No suggestions: no candidate clears every bar yet." : "No suggestions: no rule has enough decisions that agree."));
    else if (!found.can_apply) suggestions.append(h("p.notice.info", {}, `You (${app.me.name}) can read the suggestions; applying one needs the admin role.`));
    if (found.nearest.length) {
      suggestions.append(
        h("h3", {}, "Nearest to a suggestion"),
        h("ul.nearest", { id: "nearest" }, found.nearest.map((c) => h("li.candidate", { dataset: { kind: c.kind, tool: c.tool } }, worded(c.text)))),
      );
    }
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    refresh().catch((error) => notify(error.message, "error"));
  });
  refresh().catch((error) => notify(`The insights did not load: ${error.message}`, "error"));
  return () => {};
}

function row(group) {
  const cell = (value) => h("td", {}, String(value));
  return h(
    "tr",
    { dataset: { tool: group.tool, rule: group.rule || "default" } },
    h("td", {}, h("code.rule", {}, group.rule || "default")),
    h("td", {}, h("b", {}, group.tool)),
    cell(group.agent || ""),
    h("td.count-asked", {}, String(group.asked)),
    ...["approved", "edited", "responded", "answered", "rejected", "expired"].map((status) => h(`td.count-${status}`, {}, String(group[status]))),
    cell(group.median_seconds === null ? "" : `${duration(group.median_seconds)} / ${duration(group.p90_seconds)}`),
    cell(group.deciders.map((d) => `${d.name} ${d.count}`).join(", ")),
    h("td.grant-uses", {}, String(group.grant_uses)),
  );
}

function duration(seconds) {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

function suggestion(item, found, app, refresh) {
  const apply = found.can_apply ? h("button.primary.apply", { type: "button" }, "Apply") : null;
  apply?.addEventListener("click", async () => {
    if (!(await confirmed(item, found))) return;
    apply.disabled = true;
    try {
      const policy = await put("/policy", { document: item.document, version: found.policy_version });
      notify(`Applied: policy version ${policy.version}`);
    } catch (error) {
      notify(error.message, "error");
    }
    await refresh().catch((error) => notify(error.message, "error"));
  });
  return h(
    `section.suggestion.suggestion-${item.kind}`,
    {},
    h("p.suggestion-text", {}, worded(item.text)),
    h("pre.diff", {}, item.diff.split("\n").map((line) => h(line.startsWith("+") && !line.startsWith("+++") ? "span.added" : "span", {}, `${line}\n`))),
    h("p.help", {}, `Checked: the policy with this rule judges the ${item.checked} calls behind it as said.`),
    apply,
  );
}

// Whether the admin confirms applying `item`: it changes the live policy at once, so the rule it
// adds (its lines of the diff) and what it would have let through are shown first, as approving
// a destructive call asks first. Nothing is sent before Apply here.
function confirmed(item, found) {
  const box = document.getElementById("dialog");
  const added = item.diff.split("\n").filter((line) => line.startsWith("+") && !line.startsWith("+++"));
  const cancel = h("button.secondary", { type: "button", dataset: { action: "cancel" }, onclick: () => box.close() }, "Cancel");
  const form = h(
    "form.dialog-form.confirm-apply",
    { method: "dialog" },
    h("h2", {}, "Change the live policy?"),
    h("p", {}, "This adds a rule to policy version ", h("code", {}, found.policy_version), ", in force at once, recorded in the audit as your change:"),
    h("pre.diff", {}, added.map((line) => h("span.diff-line.diff-add", {}, line))),
    h("p.help.allowed", {}, allowed(item, found.days)),
    h("div.dialog-actions", {}, cancel, h("button.primary", { type: "submit", dataset: { action: "submit" } }, "Apply")),
  );
  return new Promise((resolve) => {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      resolve(true);
      box.close();
    });
    box.addEventListener("close", () => resolve(false), { once: true });
    clear(box, form);
    box.showModal();
    cancel.focus(); // Enter does not apply by itself
  });
}

// What the rule would have let through of the window's calls.
function allowed(item, days) {
  const refused = `of the ${item.refused} like them that people refused, it allows ${item.let_through}`;
  if (item.kind === "deny") return `It allows nothing: it denies these calls from now on (${item.matched} of the ${item.total} decided in the last ${days} days were rejected).`;
  if (item.kind === "limit") return `It would have allowed the ${item.matched} calls as people edited them, without asking (it still asks about them as they were requested); ${refused}.`;
  return `It would have allowed calls like these without asking: ${item.matched} of the ${item.total} decided in the last ${days} days were approved unchanged; ${refused}.`;
}

// A text with `code` in backquotes, as elements.
function worded(text) {
  return text.split("`").map((part, i) => (i % 2 ? h("code", {}, part) : part));
}
