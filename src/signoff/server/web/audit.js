// The audit page: the decision history — who, what, when, reason, edited arguments — newest
// first, every other entry (verdicts, grants, policy changes) a filter away, and Verify, which
// checks the hash chain of the whole log on the server. A damaged entry says what is wrong.

import { get } from "./api.js";
import { argsDiff, clear, h, jsonView, labelCells, notify, when } from "./dom.js";

// The entries other than decisions, each as the filter names them.
const KINDS = {
  verdict: "verdicts",
  grant: "grants",
  revoke: "revocations",
  policy: "policy changes",
  forward: "calls the MCP gateway forwarded",
  unknown: "calls of unknown outcome",
};

const PAGE = 1000;
const MOST = 20000;

export function auditPage(main) {
  const body = h("tbody");
  const verdict = h("div.verify-result", { id: "verify-result", "aria-live": "polite" });
  const verify = h("button.primary", { type: "button", id: "verify" }, "Verify the chain");
  const kinds = h(
    "select",
    { "aria-label": "entries to show" },
    h("option", { value: "decision" }, "decisions"),
    h("option", { value: "" }, "everything"),
    Object.entries(KINDS).map(([kind, label]) => h("option", { value: kind }, label)),
  );
  const note = h("p.muted");
  const table = h(
    "table.audit.stacked",
    {},
    h("thead", {}, h("tr", {}, ["#", "When", "Who", "What", "Tool", "Details"].map((t) => h("th", {}, t)))),
    body,
  );
  clear(main, h("h1", {}, "Audit"), h("div.filters", {}, kinds, verify, verdict), note, table);

  let entries = [];
  const show = () => {
    const wanted = kinds.value;
    const shown = entries.filter((e) => !wanted || e.action === wanted).reverse();
    clear(body, shown.map(row));
    if (!shown.length) clear(body, h("tr", {}, h("td", { colSpan: 6 }, "No entries.")));
    labelCells(table);
  };
  kinds.addEventListener("change", show);
  verify.addEventListener("click", async () => {
    clear(verdict, "checking…");
    let result;
    try {
      result = await get("/audit/verify");
    } catch (error) {
      clear(verdict, h("span.form-error", { role: "alert" }, error.message));
      return;
    }
    // The server's words: what was found, and — without a checkpoint — what cannot be proven.
    clear(
      verdict,
      result.ok
        ? h("span.verified.ok", {}, words(result.reason))
        : h("span.verified.broken", { role: "alert" }, words(`broken: ${result.reason}`)),
    );
  });

  (async () => {
    // The newest entries: numbered from 1, so the last MOST start after length - MOST.
    const { length } = await get("/audit?limit=1");
    entries = [];
    for (let after = Math.max(0, length - MOST); ; ) {
      const page = await get(`/audit?after=${after}&limit=${PAGE}`);
      entries.push(...page.items);
      if (page.next === null) break;
      after = page.next;
    }
    note.textContent = length > MOST ? `The newest ${MOST} of ${length} entries.` : "";
    show();
  })().catch((error) => notify(`The audit log did not load: ${error.message}`, "error"));
  return () => {};
}

// The server's sentence as a sentence: capitalised, its `code` as code.
function words(text) {
  const sentence = text.charAt(0).toUpperCase() + text.slice(1);
  return sentence.split(/`([^`]*)`/).map((part, i) => (i % 2 ? h("code", {}, part) : part));
}

function row(entry) {
  const data = entry.data || {};
  const decision = data.decision || {};
  const details = [];
  if (entry.problem) details.push(h("div.form-error", {}, `Damaged: ${entry.problem}`));
  if (entry.action === "decision") {
    const run = data.run_id ? h("a.run-link", { href: `#/runs/${encodeURIComponent(data.run_id)}` }, "open run") : null;
    details.push(h("div.decision-head", {}, h("span.badge", { className: `badge status-${data.status}` }, data.status), run));
    if (decision.reason) details.push(h("div.decision-reason", {}, `Reason: ${decision.reason}`));
    if (decision.content) details.push(h("div", {}, `Response: ${decision.content}`));
    if (decision.args) {
      // Kept since signoff stored both: the arguments requested, and those the edit ran with.
      details.push(h("div", {}, "Edited arguments:"), data.args ? argsDiff(data.args, decision.args) : jsonView(decision.args));
    }
    if (decision.always) details.push(h("div", {}, `Always, for this ${decision.always.scope}`));
  } else {
    details.push(h("details", {}, h("summary", {}, data.verdict || data.reason || "data"), jsonView(data)));
  }
  return h(
    "tr",
    { dataset: { seq: String(entry.seq), action: entry.action } },
    h("td.mono.seq", {}, String(entry.seq)),
    h("td", {}, when(entry.at)),
    h("td", {}, entry.actor),
    h("td", {}, entry.action),
    h("td", {}, data.tool || ""),
    h("td", {}, details),
  );
}
