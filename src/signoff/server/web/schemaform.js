// A form generated from a tool's JSON schema: strings, numbers, integers, booleans, enums,
// arrays, nested objects, optional (nullable) values; anything else edits as raw JSON. The
// server validates; its errors come back with a JSON-pointer path shown next to that field.

import { MASK, h } from "./dom.js";

const DEEPEST = 8; // a schema that nests deeper (or refers to itself) edits as JSON below this

// An editor for `value` under `schema`: {element, read() -> value (undefined: leave out),
// showError(path, message) -> whether a field took it, clearErrors()}.
export function schemaForm(schema, value) {
  const root = schema || {};
  const fields = new Map(); // JSON pointer -> error element
  const editor = build(root, root, value, "", fields, { label: null, required: true, depth: 0 });
  return {
    element: h("div.schema-form", {}, editor.element),
    read: () => editor.read(),
    showError(path, message) {
      const key = path && path !== "/" ? path : "";
      // The nearest field at or above the path takes it.
      for (let at = key; ; at = at.slice(0, Math.max(0, at.lastIndexOf("/")))) {
        const slot = fields.get(at);
        if (slot) {
          slot.textContent = message;
          slot.hidden = false;
          slot.closest(".field")?.classList.add("invalid");
          return true;
        }
        if (!at) return false;
      }
    },
    clearErrors() {
      for (const slot of fields.values()) {
        slot.hidden = true;
        slot.textContent = "";
        slot.closest(".field")?.classList.remove("invalid");
      }
    },
  };
}

function resolve(root, schema) {
  let found = schema || {};
  for (let depth = 0; found.$ref && depth < 32; depth++) {
    const path = found.$ref.replace(/^#\//, "").split("/");
    let target = root;
    for (const part of path) target = target?.[part.replaceAll("~1", "/").replaceAll("~0", "~")];
    const { $ref, ...rest } = found;
    found = { ...(target || {}), ...rest };
  }
  return found;
}

// `X | None`: {anyOf: [X, {type: "null"}]} → X, nullable.
function unwrapNullable(root, schema) {
  const options = schema.anyOf || schema.oneOf;
  if (options && options.length === 2) {
    const other = options.filter((o) => resolve(root, o).type !== "null");
    if (other.length === 1) {
      const { anyOf, oneOf, ...rest } = schema;
      return { schema: { ...resolve(root, other[0]), ...rest }, nullable: true };
    }
  }
  return { schema, nullable: schema.type === "null" };
}

function kindOf(schema) {
  if (Array.isArray(schema.enum)) return "enum";
  if ("const" in schema) return "const";
  const type = Array.isArray(schema.type) ? schema.type.filter((t) => t !== "null") : [schema.type];
  if (type.length !== 1) return "json";
  if (type[0] === "object" && schema.properties) return "object";
  if (["string", "integer", "number", "boolean", "array"].includes(type[0])) return type[0];
  return "json";
}

function build(root, rawSchema, value, path, fields, { label, required, description, depth }) {
  const resolved = resolve(root, rawSchema);
  const { schema, nullable } = unwrapNullable(root, resolved);
  const masked = value === MASK;
  const kind = masked && kindOf(schema) !== "string" ? "masked" : depth > DEEPEST ? "json" : kindOf(schema);
  const error = h("div.field-error", { role: "alert", hidden: true });
  fields.set(path, error);
  const shown = value === undefined && !nullable ? schema.default ?? resolved.default : value;
  const inner =
    kind === "masked"
      ? keptSecret(root, schema, path, fields, depth)
      : editorFor(kind, root, schema, shown, path, fields, depth);
  const title = label ?? schema.title ?? "";
  const help = description ?? schema.description;
  // A nullable value, or an optional object or list, is built only when ticked; another
  // optional value is sent when it was given or the person changed it (its default shows).
  const given = value !== undefined && value !== null;
  let include = null;
  let touched = false;
  inner.element.addEventListener("input", () => (touched = true));
  inner.element.addEventListener("change", () => (touched = true));
  if (label !== null && (nullable || (!required && (kind === "object" || kind === "array")))) {
    include = h("input.include", {
      type: "checkbox",
      checked: given,
      title: nullable ? "give a value (unticked: null)" : "give a value (unticked: left out)",
      "aria-label": `set ${title}`,
    });
    include.addEventListener("change", () => inner.element.classList.toggle("unset", !include.checked));
    inner.element.classList.toggle("unset", !given);
  }
  const element = h(
    `div.field.kind-${kind}`,
    { dataset: { path } },
    label === null
      ? null
      : h(
          "label.field-label",
          {},
          include,
          h("span.name", {}, title),
          required ? h("span.required", { title: "required" }, "*") : null,
        ),
    help ? h("div.help", {}, help) : null,
    inner.element,
    error,
  );
  return {
    element,
    read() {
      if (include && !include.checked) {
        // Unticked: null where null is allowed and the key must be there or was; else left out.
        return nullable && (required || value !== undefined) ? null : undefined;
      }
      if (!include && !required && value === undefined && !touched) return undefined;
      return inner.read();
    },
  };
}

// A redacted value that is not text: kept as it is (the server puts the original back) unless
// the person chooses to replace it.
function keptSecret(root, schema, path, fields, depth) {
  const kept = h("span.j-masked", { title: "redacted: the original is kept" }, MASK);
  let replacement = null;
  const replace = h("button.link", { type: "button" }, "replace");
  const element = h("div.kept", {}, kept, " ", replace);
  replace.addEventListener("click", () => {
    replacement = editorFor(kindOf(schema), root, schema, undefined, path, fields, depth);
    element.replaceChildren(replacement.element);
  });
  return { element, read: () => (replacement ? replacement.read() : MASK) };
}

function editorFor(kind, root, schema, value, path, fields, depth) {
  const id = `f${path.replaceAll("/", "-") || "-root"}`;
  switch (kind) {
    case "object": {
      const required = new Set(schema.required || []);
      const children = Object.entries(schema.properties).map(([name, child]) => [
        name,
        build(root, child, value?.[name], `${path}/${name}`, fields, {
          label: name,
          required: required.has(name),
          description: resolve(root, child).description,
          depth: depth + 1,
        }),
      ]);
      const known = new Set(Object.keys(schema.properties));
      const extra = Object.entries(value && typeof value === "object" ? value : {}).filter(
        ([k]) => !known.has(k),
      );
      return {
        element: h("fieldset.object", { id }, children.map(([, c]) => c.element)),
        read() {
          const out = Object.fromEntries(extra); // keys the form does not know are kept
          for (const [name, child] of children) {
            const got = child.read();
            if (got !== undefined) out[name] = got;
          }
          return out;
        },
      };
    }
    case "array": {
      const items = schema.items || {};
      const list = h("ol.array-items");
      let rows = [];
      // Rows are numbered by position: removing one renumbers the rest, so an error the
      // server names by index lands on the row now at that index.
      const draw = (values) => {
        for (const key of [...fields.keys()]) if (key.startsWith(`${path}/`)) fields.delete(key);
        rows = values.map((item, index) => {
          const child = build(root, items, item, `${path}/${index}`, fields, {
            label: `item ${index + 1}`,
            required: true,
            depth: depth + 1,
          });
          const remove = h("button.link.remove", { type: "button", title: "remove this item" }, "remove");
          remove.addEventListener("click", () => draw(current().filter((_, i) => i !== index)));
          return { child, row: h("li.array-item", {}, child.element, remove) };
        });
        list.replaceChildren(...rows.map((r) => r.row));
      };
      const current = () => rows.map(({ child }) => child.read());
      const read = () => current().map((v) => (v === undefined ? null : v));
      draw(Array.isArray(value) ? value : []);
      const more = h("button.secondary.add", { type: "button" }, "+ add item");
      more.addEventListener("click", () => draw([...current(), undefined]));
      return { element: h("div.array", { id }, list, more), read };
    }
    case "enum":
    case "const": {
      const options = kind === "enum" ? schema.enum : [schema.const];
      const select = h(
        "select",
        { id },
        options.map((option, i) =>
          h("option", { value: String(i), selected: JSON.stringify(option) === JSON.stringify(value) }, String(option)),
        ),
      );
      return { element: select, read: () => options[Number(select.value)] };
    }
    case "boolean": {
      const box = h("input", { id, type: "checkbox", checked: value === true });
      return { element: box, read: () => box.checked };
    }
    case "integer":
    case "number": {
      const input = h("input", {
        id,
        type: "number",
        step: kind === "integer" ? "1" : "any",
        value: typeof value === "number" ? String(value) : "",
      });
      if (schema.minimum !== undefined) input.min = String(schema.minimum);
      if (schema.maximum !== undefined) input.max = String(schema.maximum);
      return {
        element: input,
        // What was typed goes to the server as typed: it says what is wrong with it.
        read: () => (input.value === "" ? undefined : Number(input.value)),
      };
    }
    case "string": {
      const text = typeof value === "string" ? value : value == null ? "" : JSON.stringify(value);
      const long = text.length > 60 || text.includes("\n");
      const input = long
        ? h("textarea", { id, rows: Math.min(12, text.split("\n").length + 1), value: text })
        : h("input", { id, type: "text", value: text });
      if (schema.pattern) input.placeholder = schema.pattern;
      return { element: input, read: () => input.value };
    }
    default: {
      const area = h("textarea.raw", { id, rows: 4, value: value === undefined ? "" : JSON.stringify(value, null, 2) });
      return {
        element: area,
        read() {
          if (!area.value.trim()) return undefined;
          try {
            return JSON.parse(area.value);
          } catch {
            return area.value; // the server names what is wrong
          }
        },
      };
    }
  }
}
