// An approval's own page (#/approvals/ID): its card whatever its status, decided from here and
// redrawn when it is decided anywhere else. A call another framework's run holds (or the MCP
// gateway) belongs to no run of signoff's: this page is where it is seen on its own.

import { ApiError, get } from "./api.js";
import { approvalCard, fill } from "./cards.js";
import { clear, h, notify } from "./dom.js";

const WAIT = 25; // seconds each long poll waits for a decision before asking again

export function approvalPage(main, app, id) {
  const holder = h("section.cards", { id: "approval", "aria-live": "polite" });
  clear(main, h("h1", {}, "Approval ", h("span.muted.mono", {}, id)), holder);
  const stopped = new AbortController();
  const context = { schemaFor: app.schemaFor, changed: () => {}, showRun: true, own: true };
  let card = null;

  function show(approval) {
    if (!card) {
      card = approvalCard(approval, context);
      clear(holder, card);
    } else if (card.dataset.status !== approval.status) {
      fill(card, approval, context);
    }
    app.cardsChanged();
  }

  // Decisions on calls outside signoff's runs are in no run's event stream: the approval
  // itself is asked, and the server answers once it is decided (or after WAIT seconds).
  (async () => {
    let wait = 0;
    let failing = false;
    while (!stopped.signal.aborted) {
      let approval;
      try {
        const path = `/approvals/${encodeURIComponent(id)}${wait ? `?wait=${wait}` : ""}`;
        approval = await get(path, { signal: stopped.signal });
      } catch (error) {
        if (stopped.signal.aborted) return;
        if (error instanceof ApiError && error.status === 404) {
          clear(holder, h("p.empty", {}, error.message));
          return;
        }
        if (!failing) notify(`The approval did not load: ${error.message}`, "error");
        failing = true;
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      failing = false;
      show(approval);
      if (approval.status !== "pending") return;
      wait = WAIT;
    }
  })();
  return () => stopped.abort();
}
