// The policy page: every agent's tools with a "Require approval?" switch and allow / ask / deny,
// the rule that decides each, and an explain box for a tool with arguments. Changes need the
// admin role; each is a new, audited policy version.

import { get, post, put, query } from "./api.js";
import { clear, h, jsonView, notify } from "./dom.js";

export function policyPage(main, app) {
  const summary = h("div.policy-summary");
  const tables = h("div.policy-agents");
  const editable = app.me.roles.includes("admin");
  clear(
    main,
    h("h1", {}, "Policy"),
    summary,
    editable ? null : h("p.notice.info", {}, `You (${app.me.name}) can read the policy; changing it needs the admin role.`),
    tables,
    h("h2", {}, "Explain a call"),
    explainBox(app),
  );

  async function refresh() {
    const [policy, grants] = await Promise.all([get("/policy"), get("/grants"), app.reloadAgents()]);
    const canEdit = editable && policy.document !== null;
    clear(
      summary,
      h("span", {}, "version ", h("code", { id: "policy-version" }, policy.version)),
      h("span", {}, ` · default: ${policy.default}`),
      policy.source ? h("span", {}, ` · from ${policy.source}`) : null,
      policy.document === null ? h("span.muted", {}, " · given in code: not editable here") : null,
    );
    // The grants in force per tool: a tool that asks may still let calls through under them.
    const granted = new Map();
    for (const grant of grants.items.filter((g) => g.status === "active")) {
      granted.set(grant.tool, [...(granted.get(grant.tool) || []), grant]);
    }
    const context = { canEdit, version: policy.version, refresh, granted };
    clear(tables, app.agents.map((agent) => agentTable(agent, context)));
  }
  refresh().catch((error) => notify(`The policy did not load: ${error.message}`, "error"));
  return () => {};
}

function agentTable(agent, context) {
  return h(
    "section.policy-agent",
    { dataset: { agent: agent.path } },
    h("h2", {}, agent.path, agent.description ? h("span.muted", {}, ` — ${agent.description}`) : null),
    h(
      "table.tools",
      {},
      h("thead", {}, h("tr", {}, ["Tool", "Require approval?", "Verdict", "Decided by"].map((t) => h("th", {}, t)))),
      h("tbody", {}, agent.tools.map((tool) => toolRow(agent, tool, context))),
    ),
  );
}

function toolRow(agent, tool, { canEdit, version, refresh, granted }) {
  const verdict = tool.verdict.kind;
  const change = async (next) => {
    // One change at a time, made against the version on screen (409 if another came first).
    for (const control of document.querySelectorAll(".policy-agents input, .policy-agents select")) {
      control.disabled = true;
    }
    try {
      const path = `/policy/tools/${encodeURIComponent(tool.name)}${query({ agent: agent.path })}`;
      await put(path, { verdict: next, version });
      notify(`${agent.path}/${tool.name}: ${next}`);
    } catch (error) {
      notify(error.message, "error");
    }
    await refresh().catch((error) => notify(error.message, "error"));
  };
  const toggle = h("input.switch", {
    type: "checkbox",
    role: "switch",
    checked: verdict === "ask",
    disabled: !canEdit || verdict === "deny",
    "aria-label": `require approval for ${tool.name}`,
    title: verdict === "deny" ? "denied: choose a verdict instead" : "ask a person before each call",
  });
  toggle.addEventListener("change", () => change(toggle.checked ? "ask" : "allow"));
  const select = h(
    `select.verdict.verdict-${verdict}`,
    { disabled: !canEdit, "aria-label": `verdict for ${tool.name}` },
    ["allow", "ask", "deny"].map((kind) => h("option", { value: kind, selected: kind === verdict }, kind)),
  );
  select.addEventListener("change", () => change(select.value));
  return h(
    "tr",
    { dataset: { tool: tool.name, verdict } },
    h("td", {}, h("b", {}, tool.name), h("div.help", {}, tool.description || "")),
    h("td.require", {}, h("label.switch-label", {}, toggle, h("span.slider"))),
    h("td.verdict", {}, select),
    h(
      "td.decided",
      {},
      h("code.rule", {}, tool.verdict.rule || "default"),
      tool.verdict.reason ? h("div.help", {}, tool.verdict.reason) : null,
      grantNote(tool.name, granted.get(tool.name) || []),
    ),
  );
}

// "approved always: 2 grants (bob for all, …)": what lets calls through that the verdict asks about.
function grantNote(tool, grants) {
  if (!grants.length) return null;
  const who = grants.slice(0, 2).map((g) => `${g.granted_by} for ${g.subject === null ? g.scope : `${g.scope} ${g.subject}`}`);
  const more = grants.length > 2 ? `, +${grants.length - 2} more` : "";
  return h(
    "div.grant-note",
    {},
    h("a", { href: `#/grants?tool=${encodeURIComponent(tool)}` }, `approved always: ${grants.length} grant${grants.length > 1 ? "s" : ""}`),
    ` (${who.join(", ")}${more})`,
  );
}

function explainBox(app) {
  const agent = h(
    "select",
    { name: "agent", "aria-label": "agent" },
    app.agents.map((a) => h("option", { value: a.path }, a.path)),
  );
  const tool = h("input", { name: "tool", type: "text", required: true, placeholder: "tool name", list: "explain-tools", "aria-label": "tool" });
  const names = [...new Set(app.agents.flatMap((a) => a.tools.map((t) => t.name)))];
  const datalist = h("datalist", { id: "explain-tools" }, names.map((n) => h("option", { value: n })));
  const args = h("textarea", { name: "args", rows: 3, placeholder: '{"path": "notes.txt"}', "aria-label": "arguments" });
  const out = h("div.explanation", { id: "explanation", "aria-live": "polite" });
  const form = h("form.explain", {}, agent, tool, datalist, args, h("button.primary", { type: "submit" }, "Explain"), out);
  form.setAttribute("novalidate", "");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let parsed = {};
    try {
      parsed = args.value.trim() ? JSON.parse(args.value) : {};
    } catch (error) {
      return clear(out, h("p.form-error", { role: "alert" }, `Arguments are not JSON: ${error.message}`));
    }
    try {
      const result = await post("/policy/explain", { tool: tool.value, agent: agent.value, args: parsed });
      clear(
        out,
        h("p", {}, h(`span.badge.verdict-${result.kind}`, {}, result.kind), " by ", h("code.rule", {}, result.rule || "default")),
        result.reason ? h("p.help", {}, result.reason) : null,
        result.shadowed.length ? h("p.help", {}, "Also matched, but not deciding: ", result.shadowed.join(", ")) : null,
        result.grant ? h("p.help.explain-grant", {}, `Let through by the grant ${result.grant.granted_by} left (${result.grant.scope}); `, h("a", { href: `#/grants?tool=${encodeURIComponent(result.grant.tool)}` }, "see grants")) : null,
        result.grants_passed_over.map((g) => h("p.help.explain-passed-over", {}, `Grant by ${g.granted_by} (${g.scope}) does not apply: ${g.why}`)),
      );
    } catch (error) {
      clear(out, h("p.form-error", { role: "alert" }, error.message), error.body?.problems ? jsonView(error.body.problems) : null);
    }
  });
  return form;
}
