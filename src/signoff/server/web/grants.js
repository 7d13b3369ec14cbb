// The grants page: every standing approval "approve always" left — its tool, scope, argument
// binding, who granted it and when, how often it let a call through, whether its rule still
// stands — and Revoke (for its granter, or the admin role). Revoking is audited.

import { api, get, query } from "./api.js";
import { clear, h, jsonView, labelCells, notify, when } from "./dom.js";

const STATUS = {
  active: "in force",
  stale: "covers nothing: its rule changed",
  inactive: "covers nothing now",
  revoked: "revoked",
};

export function grantsPage(main, app, params) {
  const body = h("tbody");
  const withRevoked = h("input", { type: "checkbox", name: "revoked", checked: params.get("revoked") === "1" });
  const tool = params.get("tool") || "";
  const table = h(
    "table.grants.stacked",
    {},
    h("thead", {}, h("tr", {}, ["Tool", "Scope", "Arguments", "Granted by", "When", "Uses", "Status", ""].map((t) => h("th", {}, t)))),
    body,
  );
  clear(
    main,
    h("h1", {}, "Grants", tool ? h("span.muted", {}, ` for ${tool}`) : null),
    h("p.help", {}, "Left by “Approve always”: later calls the same rule asks about run without asking, within the grant's scope — never past a deny, never a call its granter could not approve."),
    h("div.filters", {}, h("label.choice", {}, withRevoked, " show revoked grants")),
    table,
  );

  async function refresh() {
    const page = await get(`/grants${query({ tool, revoked: withRevoked.checked ? "true" : "" })}`);
    clear(body, page.items.map((grant) => row(grant, app, refresh)));
    if (!page.items.length) clear(body, h("tr", {}, h("td", { colSpan: 8 }, "No grants.")));
    labelCells(table);
  }
  withRevoked.addEventListener("change", () => refresh().catch((error) => notify(error.message, "error")));
  refresh().catch((error) => notify(`The grants did not load: ${error.message}`, "error"));
  return () => {};
}

function row(grant, app, refresh) {
  const mayRevoke = grant.status !== "revoked" && (grant.granted_by === app.me.name || app.me.roles.includes("admin"));
  const revoke = h("button.danger", { type: "button", dataset: { action: "revoke" }, disabled: !mayRevoke, title: mayRevoke ? "No call passes under it from now on" : "Its granter or an admin may revoke it" }, "Revoke");
  revoke.addEventListener("click", async () => {
    revoke.disabled = true;
    try {
      await api("DELETE", `/grants/${encodeURIComponent(grant.id)}`);
      notify(`Revoked: ${grant.tool} (${grant.scope})`);
    } catch (error) {
      notify(error.message, "error");
    }
    await refresh().catch((error) => notify(error.message, "error"));
  });
  const scope = grant.subject === null ? grant.scope : `${grant.scope} ${grant.subject}`;
  return h(
    "tr",
    { dataset: { grantId: grant.id, status: grant.status, tool: grant.tool } },
    h("td", {}, h("b", {}, grant.tool), grant.server ? h("div.help", {}, `on ${grant.server}`) : null, h("div.help", {}, "rule ", h("code.rule", {}, grant.rule || "default"))),
    h("td", {}, scope, grant.agent ? h("div.help", {}, `agent ${grant.agent}`) : null, ["run", "thread"].includes(grant.scope) ? h("div.help", {}, `only calls ${grant.requested_by} requests`) : null),
    h("td", {}, grant.with_args ? [h("div", {}, "exactly:"), grant.args ? jsonView(grant.args) : null] : "any"),
    h("td", {}, grant.granted_by, grant.roles.length ? h("div.help", {}, `as ${grant.roles.join(", ")}`) : null),
    h("td", {}, when(grant.granted_at)),
    h("td", {}, String(grant.uses), grant.last_used_at ? h("div.help", {}, `last ${when(grant.last_used_at)}`) : null),
    h(`td.status-${grant.status}`, {}, STATUS[grant.status] || grant.status, grant.why ? h("div.help", {}, grant.why) : null, grant.revoked_by ? h("div.help", {}, `by ${grant.revoked_by}, ${when(grant.revoked_at)}`) : null),
    h("td", {}, grant.status === "revoked" ? null : revoke),
  );
}
