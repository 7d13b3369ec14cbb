// Building the page: elements from plain data (text is always text, never HTML), and the
// formats every page shares.

// h("button.primary", {onclick, title: "..."}, "Approve"): a tag with classes, attributes
// (functions are listeners, booleans toggle, `dataset` and `hidden` as expected), children.
export function h(spec, attributes = {}, ...children) {
  const [tag, ...classes] = spec.split(".");
  const element = document.createElement(tag || "div");
  if (classes.length) element.classList.add(...classes);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    else if (value === true) element.setAttribute(name, "");
    else if (name in element && name !== "list" && name !== "form") element[name] = value;
    else element.setAttribute(name, value);
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
}

export function clear(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

export const MASK = "••••••";
const LONG = 160;

// Arguments as pretty JSON: long strings collapsed behind "show all", values the server
// redacted shown as masked.
export function jsonView(value) {
  return h("pre.json", {}, render(value, ""));
}

function render(value, indent) {
  if (value === null) return h("span.j-null", {}, "null");
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    const inner = indent + "  ";
    return [
      "[\n",
      value.map((item, i) => [inner, render(item, inner), i < value.length - 1 ? ",\n" : "\n"]),
      indent,
      "]",
    ];
  }
  if (typeof value === "object") {
    const entries = Object.entries(value);
    if (!entries.length) return "{}";
    const inner = indent + "  ";
    return [
      "{\n",
      entries.map(([key, item], i) => [
        inner,
        h("span.j-key", {}, JSON.stringify(key)),
        ": ",
        render(item, inner),
        i < entries.length - 1 ? ",\n" : "\n",
      ]),
      indent,
      "}",
    ];
  }
  if (typeof value === "string") {
    if (value === MASK) return h("span.j-masked", { title: "redacted by the server" }, MASK);
    const text = JSON.stringify(value);
    if (text.length <= LONG) return h("span.j-string", {}, text);
    const shown = h("span.j-string", {}, text.slice(0, LONG - 20) + "…");
    const toggle = h("button.link.j-more", { type: "button" }, `show all ${text.length} characters`);
    toggle.addEventListener("click", () => {
      const full = shown.textContent.endsWith("…");
      shown.textContent = full ? text : text.slice(0, LONG - 20) + "…";
      toggle.textContent = full ? "show less" : `show all ${text.length} characters`;
    });
    return [shown, " ", toggle];
  }
  return h(`span.j-${typeof value}`, {}, JSON.stringify(value));
}

// What an edit changed: one row per path whose value differs, requested then decided (or, for a
// call still waiting, as `labels` name them).
export function argsDiff(before, after, labels = ["requested", "ran with"]) {
  const rows = [];
  const walk = (a, b, path) => {
    const plain = (v) => v === null || typeof v !== "object";
    if (!plain(a) && !plain(b) && Array.isArray(a) === Array.isArray(b)) {
      const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
      for (const key of keys) walk(a[key], b[key], `${path}/${key}`);
      return;
    }
    if (JSON.stringify(a) !== JSON.stringify(b)) rows.push([path || "/", a, b]);
  };
  walk(before ?? {}, after ?? {}, "");
  const cell = (value) => (value === undefined ? h("span.muted", {}, "(none)") : jsonView(value));
  return h(
    "table.args-diff",
    {},
    h("thead", {}, h("tr", {}, h("th", {}, "argument"), h("th", {}, labels[0]), h("th", {}, labels[1]))),
    h("tbody", {}, rows.map(([path, a, b]) => h("tr", { dataset: { path } }, h("td.mono", {}, path), h("td.before", {}, cell(a)), h("td.after", {}, cell(b))))),
  );
}

// Each body cell of `table` named by its column's heading (`data-label`): on a narrow screen a
// `table.stacked` shows each row as label and value pairs, one under the other.
export function labelCells(table) {
  const names = [...table.querySelectorAll("thead th")].map((th) => th.textContent);
  for (const row of table.querySelectorAll("tbody tr")) {
    [...row.cells].forEach((cell, i) => {
      if (names[i] && cell.colSpan === 1) cell.dataset.label = names[i];
    });
  }
}

export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

// "4m 12s left", "expired"; null without a deadline.
export function timeLeft(iso, now = Date.now()) {
  if (!iso) return null;
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  if (seconds <= 0) return "expired";
  const d = Math.floor(seconds / 86400);
  const hours = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (d) return `${d}d ${hours}h left`;
  if (hours) return `${hours}h ${m}m left`;
  if (m) return `${m}m ${s}s left`;
  return `${s}s left`;
}

// A message in the page's notice area, gone after a while.
export function notify(text, kind = "info") {
  const area = document.getElementById("notices");
  const note = h(`div.notice.${kind}`, { role: kind === "error" ? "alert" : "status" }, text);
  area.append(note);
  if (kind === "error") console.warn(`signoff: ${text}`); // kept in the console's history
  setTimeout(() => note.remove(), kind === "error" ? 8000 : 4000);
}

// `load` with its failures told to the person rather than lost.
export function guarded(load, what) {
  return () => load().catch((error) => notify(`${what}: ${error.message}`, "error"));
}

export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
