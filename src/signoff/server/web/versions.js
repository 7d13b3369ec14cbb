// What you see is what you approve: every decision the page sends names the version of the
// approval its card showed (`version`), and the server refuses one made on a version that changed
// since — edited, voted on, handed on, escalated, judged again — with a 409 that says what changed,
// writing nothing. This module is what a card shows of that: a call edited while it waited, with
// both argument sets and who edited it; and a decision that was not taken, saying why.

import { ApiError } from "./api.js";
import { argsDiff, h, jsonView, when } from "./dom.js";

// `body` as sent for a decision on `approval`: on the version the person saw.
export function versioned(approval, body) {
  return { ...body, version: approval.version };
}

// Whether `error` is the server's refusal of a decision made on a version that changed since.
export function isStale(error) {
  return error instanceof ApiError && error.status === 409 && error.body.error === "StaleDecisionError";
}

// A call edited while it waited (a rule that needs several people: the editor's approval counts
// for the edited call): what was asked and what runs if it is approved, side by side, what
// changed between them, and who edited it when.
export function editedArgs(approval) {
  const edits = (approval.changes || []).filter((change) => change.kind === "edit");
  const by = edits.map((change) => `${change.by} at ${when(change.at)}`).join(", then by ");
  return h(
    "div.edited-args",
    { dataset: { editedBy: edits.map((change) => change.by).join(",") } },
    h(
      "p.edited-by",
      {},
      h("b", {}, by ? `Edited by ${by}` : "Edited while it waited"),
      ": approved, it runs with the arguments as edited, not with those asked for.",
    ),
    argsDiff(approval.requested_args, approval.args, ["asked", "will run"]),
    h(
      "div.args-sets",
      {},
      h("div.args-asked", {}, h("div.label", {}, "Asked"), jsonView(approval.requested_args)),
      h("div.args-run", {}, h("div.label", {}, "Will run (as edited)"), jsonView(approval.args)),
    ),
  );
}

// Why the person's last decision on this card was not taken: the server's words, or — for one
// dropped in its undo window, never sent — ours.
export function staleNote(text) {
  return h("div.stale", { role: "alert" }, h("b", {}, "Not sent: "), text);
}

// In words, who changed the approval after version `seen` (the changes it keeps).
export function changedSince(approval, seen) {
  const words = { edit: "edited", vote: "approved", assign: "assigned", escalate: "escalated", policy: "judged again by a new policy" };
  const said = (approval.changes || [])
    .filter((change) => change.version > seen)
    .map((change) => (change.kind === "escalate" || change.kind === "policy" ? words[change.kind] : `${words[change.kind] || change.kind} by ${change.by}`));
  return said.length ? said.join(", then ") : "changed";
}
