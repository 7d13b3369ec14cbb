// An approval's own page (/approvals/ID, where notifications link, or #/approvals/ID): its card
// whatever its status — what the user asked, the call, who asks under which rule, the time left —
// decided from here and redrawn in place whenever it changes anywhere else (edited, voted on,
// handed on, escalated, decided); once decided, who decided
// what, and the grant an "approve always" left. A call another framework's run holds (or the MCP
// gateway) belongs to no run of signoff's: this page is where it is seen on its own, with the
// conversation its thread had when the call was held.

import { ApiError, get, query } from "./api.js";
import { approvalCard, update } from "./cards.js";
import { showConversation } from "./conversation.js";
import { clear, h, notify } from "./dom.js";

const WAIT = 25; // seconds each long poll waits for a change before asking again

const GRANT_STATUS = { active: "in force", stale: "covers nothing: its rule changed", inactive: "covers nothing now", revoked: "revoked" };

export function approvalPage(main, app, id) {
  const holder = h("section.cards", { id: "approval", "aria-live": "polite" });
  const grant = h("div.approval-grant", { id: "approval-grant", "aria-live": "polite" });
  const conversation = h("div", { id: "approval-conversation" });
  clear(
    main,
    h("h1", {}, "Approval ", h("span.muted.mono.approval-id", {}, id)),
    holder,
    grant,
    h("section.approval-conversation", {}, h("h2", {}, "Conversation"), conversation),
  );
  const stopped = new AbortController();
  const context = { schemaFor: app.schemaFor, changed: () => {}, showRun: true, own: true };
  let card = null;

  function show(approval) {
    if (!card) {
      card = approvalCard(approval, context);
      clear(holder, card);
      showConversation(conversation, approval.id).catch((error) => notify(`The conversation did not load: ${error.message}`, "error"));
    } else {
      update(card, approval, context);
    }
    app.cardsChanged();
    if (approval.decision?.always && !grant.hasChildNodes()) {
      showGrant(grant, approval).catch((error) => notify(`The grant did not load: ${error.message}`, "error"));
    }
  }

  function missing() {
    document.title = "signoff — no such approval";
    clear(
      main,
      h("h1", {}, "No such approval"),
      h(
        "div.empty",
        { id: "approval-missing", role: "alert" },
        h("p", {}, "This server has no approval with the id ", h("code", {}, id), "."),
        h("p", {}, "Check the link, or find the call in the ", h("a", { href: "/#/" }, "inbox"), "."),
      ),
    );
  }

  // Decisions on calls outside signoff's runs are in no run's event stream, and edits, votes,
  // hand-overs in no stream of events at all: the approval itself is asked, and the server
  // answers once it is no longer at the version shown (or after WAIT seconds).
  (async () => {
    let wait = 0;
    let version = null;
    let failing = false;
    while (!stopped.signal.aborted) {
      let approval;
      try {
        const path = `/approvals/${encodeURIComponent(id)}${wait ? query({ wait, version }) : ""}`;
        approval = await get(path, { signal: stopped.signal });
      } catch (error) {
        if (stopped.signal.aborted) return;
        if (error instanceof ApiError && error.status === 404) return missing();
        if (!failing) notify(`The approval did not load: ${error.message}`, "error");
        failing = true;
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      failing = false;
      show(approval);
      if (approval.status !== "pending") return;
      wait = WAIT;
      version = approval.version;
    }
  })();
  return () => stopped.abort();
}

// The grant "approve always" left: its scope, arguments and whether it is still in force.
async function showGrant(holder, approval) {
  const page = await get(`/grants${query({ tool: approval.tool, revoked: "true" })}`);
  const found = page.items.find((g) => g.approval_id === approval.id);
  if (!found) return;
  const scope = found.subject === null ? found.scope : `${found.scope} ${found.subject}`;
  clear(
    holder,
    h(
      "p.grant-note",
      { dataset: { grantId: found.id, status: found.status } },
      h("b", {}, "Grant left: "),
      `${found.tool} for ${scope}, ${found.with_args ? "with exactly these arguments" : "any arguments"} — `,
      h("span.grant-status", {}, GRANT_STATUS[found.status] || found.status, found.why ? ` (${found.why})` : ""),
      `, ${found.uses ? `used ${found.uses === 1 ? "once" : `${found.uses} times`}` : "not used yet"}. `,
      h("a", { href: `/#/grants?tool=${encodeURIComponent(found.tool)}` }, "See the grants"),
    ),
  );
}
