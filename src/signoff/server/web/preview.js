// A held call's preview — what it would change, as its tool computed it without running it —
// on its card: text, a unified diff with its added and removed lines coloured, or a small
// table; or why there is none ("preview failed: …", "preview took longer than 2 s"). The edit
// dialog asks the server for a fresh one of the edited arguments where the server owns the
// tool (`preview_edits`), and says so where the tool lives in another process.

import { post } from "./api.js";
import { h, clear } from "./dom.js";

// The preview of `approval`, or nothing when its tool has none.
export function previewView(preview) {
  if (!preview) return null;
  return h("section.preview", { dataset: { kind: preview.kind } }, h("h3.preview-title", {}, "Preview"), previewBody(preview));
}

function previewBody(preview) {
  if (preview.error !== null && preview.error !== undefined) return h("p.preview-error", { role: "note" }, failure(preview.error));
  const cut = preview.truncated ? h("p.help.preview-cut", {}, "The preview is cut: the tool's preview said more than is kept.") : null;
  if (preview.kind === "table") return [table(preview.body || []), cut];
  if (preview.kind === "diff") return [diff(String(preview.body ?? "")), cut];
  return [h("pre.text.preview-text", {}, String(preview.body ?? "")), cut];
}

// Why there is no preview, saying that it failed: signoff's own words already do ("preview
// took longer than 2 s", "not previewed: …"); another's — a framework app's `Preview(error=…)`
// — get "preview failed: " before them, and none at all is still a failure, not a blank.
function failure(error) {
  const said = String(error).trim();
  if (!said) return "preview failed";
  return /preview/i.test(said) ? said : `preview failed: ${said}`;
}

// A unified diff, one line each: added lines green, removed ones red, hunk headers muted.
function diff(text) {
  const lines = text.replace(/\n$/, "").split("\n");
  return h(
    "pre.diff",
    {},
    lines.map((line) => {
      const kind = line.startsWith("+++") || line.startsWith("---") ? "file" : line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "same";
      return h(`span.diff-line.diff-${kind}`, {}, line, "\n");
    }),
  );
}

// Rows as a table, the columns those any row has, in the order first seen.
function table(rows) {
  if (!rows.length) return h("p.help", {}, "No rows.");
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  return h(
    "table.preview-table",
    {},
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.map((row) => h("tr", {}, columns.map((c) => h("td", {}, row[c] === undefined || row[c] === null ? "" : String(row[c])))))),
  );
}

// The edit dialog's preview pane. Where the server can compute one (`preview_edits`), a
// "Preview" button, and `seen(args)`: whether those arguments were previewed as they are —
// if not, it previews them now, so the person sees what they would change before confirming.
// Where the tool lives in another process, a note saying so (and `seen` is always true).
export function editPreview(approval, read) {
  if (!approval.preview_edits) {
    const note = approval.preview ? h("p.help.no-edit-preview", {}, "No preview of edited arguments here: the tool lives in another process, which previewed only the call as requested.") : null;
    return { element: note, seen: async () => true };
  }
  const shown = h("div.edit-preview-body", { role: "status" });
  let previewed = null;
  async function show(args) {
    try {
      const found = await post(`/approvals/${encodeURIComponent(approval.id)}/preview`, { args });
      previewed = JSON.stringify(args);
      clear(shown, previewView(found.preview), h("p.help", {}, "What these arguments would change. Run them to confirm."));
    } catch (error) {
      clear(shown, h("p.preview-error", {}, error.message));
    }
  }
  const button = h("button.secondary", { type: "button", dataset: { action: "preview" } }, "Preview these arguments");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await show(read());
    } catch (error) {
      clear(shown, h("p.preview-error", {}, error.message));
    } finally {
      button.disabled = false;
    }
  });
  return {
    element: h("div.edit-preview", {}, button, shown),
    async seen(args) {
      if (previewed === JSON.stringify(args)) return true;
      await show(args);
      return false;
    },
  };
}
