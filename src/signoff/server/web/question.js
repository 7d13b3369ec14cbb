// An agent's question to a person, as its card shows it: the text, and — while it waits — the
// way to answer it: a button per choice (one click answers), checkboxes for several choices, a
// form drawn from the question's schema (MCP elicitation's flat subset: the one the gate checks
// answers against), or a text box. The server checks the answer: a field it refuses says why
// beside that field, and an answer someone gave first says who, on the card. Decided, the card
// shows the answer (who gave it is the decision's line above).

import { ApiError, get, post } from "./api.js";
import { h, jsonView } from "./dom.js";
import { isStale, versioned } from "./versions.js";

// The question's text, and the controls that answer it while it waits. The server's answer
// goes to `answered(updated)`; an answer someone gave first to `conflicted(now, message)`, with
// the question as it stands now; a refusal of a version it has changed since to `stale(error)`.
export function questionView(card, approval, { answered, conflicted, stale }) {
  const args = approval.args || {};
  const problem = h("div.form-error.answer-error", { role: "alert", hidden: !card._conflict }, card._conflict || "");
  const text = h("p.question-text", {}, args.question);
  if (approval.status !== "pending") return h("div.question", {}, text, card._conflict ? problem : null);
  if (approval.truncated) return h("div.question", {}, text, h("p.help", {}, "Show it all to answer it."));
  const path = `/approvals/${encodeURIComponent(approval.id)}`;
  const controls = answerControls(args, async (value, fields) => {
    problem.hidden = true;
    fields?.clearErrors();
    try {
      answered(await post(`${path}/decision`, versioned(approval, { kind: "answer", value })));
    } catch (error) {
      if (isStale(error)) return stale(error);
      if (error instanceof ApiError && error.status === 409) {
        card._conflict = `Not answered: ${error.message}`;
        return conflicted(await get(path).catch(() => approval));
      }
      if (!fields?.showError(fieldOf(error), error.message)) {
        problem.textContent = error.message;
        problem.hidden = false;
      }
    }
  });
  return h("div.question", { dataset: { answer: controls.kind } }, text, controls.element, problem);
}

// The field a refusal names ("answer.email: not an email", "answer.tags[1]: …"), or null.
function fieldOf(error) {
  const match = /^answer\.([^.[:]+)/.exec(error.body?.detail || "");
  return match ? match[1] : null;
}

// What answers `args`: {kind, element}. `send(value, fields)` sends an answer.
function answerControls(args, send) {
  if (Array.isArray(args.choices) && !args.multiple) {
    const buttons = args.choices.map((choice) =>
      h("button.secondary.choice-button", { type: "button", dataset: { action: "choose", choice }, onclick: () => send(choice) }, choice),
    );
    return { kind: "choice", element: h("div.actions.choices", {}, buttons) };
  }
  if (Array.isArray(args.choices)) {
    const boxes = args.choices.map((choice) => h("input", { type: "checkbox", value: choice }));
    const form = answerForm(
      h("fieldset.choices", {}, h("legend", {}, "Choose one or more"), boxes.map((box) => h("label.choice", {}, box, ` ${box.value}`))),
      () => send(boxes.filter((box) => box.checked).map((box) => box.value)),
    );
    return { kind: "choices", element: form };
  }
  if (args.schema && typeof args.schema === "object") {
    const fields = formFields(args.schema);
    return { kind: "form", element: answerForm(fields.element, () => send(fields.read(), fields)) };
  }
  const text = h("textarea", { name: "answer", rows: 3, maxLength: 4096, "aria-label": "your answer", placeholder: "Your answer" });
  return { kind: "text", element: answerForm(h("label", {}, "Your answer", text), () => send(text.value)) };
}

function answerForm(body, submit) {
  const button = h("button.primary", { type: "submit", dataset: { action: "answer" } }, "Answer");
  // The server checks the answer and names the field: the browser's own bubbles would not.
  const form = h("form.answer-form", { noValidate: true }, body, h("div.actions", {}, button));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    try {
      await submit();
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

const INPUT_TYPES = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

// A form's [name, field] pairs in the order the agent wrote them: its "x-order" (the stored
// question's keys are sorted), then any field it leaves out.
function fieldsInOrder(schema) {
  const properties = schema.properties || {};
  const order = Array.isArray(schema["x-order"]) ? schema["x-order"].filter((name) => Object.hasOwn(properties, name)) : [];
  return [...new Set([...order, ...Object.keys(properties)])].map((name) => [name, properties[name]]);
}

// A question's form: one field per property, each beside the line its refusal is shown in.
// {element, read() -> the answer, showError(name, message) -> whether a field took it, clearErrors()}.
function formFields(schema) {
  const required = new Set(schema.required || []);
  const fields = fieldsInOrder(schema).map(([name, spec]) => field(name, spec || {}, required.has(name)));
  const byName = new Map(fields.map((f) => [f.name, f]));
  return {
    element: h("div.question-form", {}, schema.description ? h("p.help", {}, schema.description) : null, fields.map((f) => f.element)),
    read() {
      const answer = {};
      for (const f of fields) {
        const value = f.read();
        if (value !== undefined) answer[f.name] = value;
      }
      return answer;
    },
    showError(name, message) {
      const found = name === null ? null : byName.get(name);
      if (!found) return false;
      found.error.textContent = message;
      found.error.hidden = false;
      found.element.classList.add("invalid");
      return true;
    },
    clearErrors() {
      for (const f of fields) {
        f.error.hidden = true;
        f.element.classList.remove("invalid");
      }
    },
  };
}

// One field: {name, element, error, read() -> its value, undefined when left empty}.
function field(name, spec, required) {
  const id = `answer-${name.replace(/[^\w-]/g, "_")}`;
  const control = input(spec, id, name);
  const error = h("div.field-error", { role: "alert", hidden: true });
  const label = h(
    "label.field-label",
    { htmlFor: control.labelled ? id : undefined },
    h("span.name", {}, spec.title || name),
    required ? h("span.required", { title: "required" }, "*") : null,
  );
  const element = h("div.field", { dataset: { field: name } }, label, spec.description ? h("div.help", {}, spec.description) : null, control.element, error);
  return { name, element, error, read: control.read };
}

// The options of a string field: [value, label] pairs, or null for free text.
function options(spec) {
  if (Array.isArray(spec.oneOf)) return spec.oneOf.map((o) => [o.const, o.title || o.const]);
  if (Array.isArray(spec.anyOf)) return spec.anyOf.map((o) => [o.const, o.title || o.const]);
  if (Array.isArray(spec.enum)) return spec.enum.map((v, i) => [v, spec.enumNames?.[i] || v]);
  return null;
}

const FEW = 4; // options shown as radio buttons; more, as a list to pick from

function input(spec, id, name) {
  if (spec.type === "boolean") {
    const box = h("input", { id, type: "checkbox", checked: spec.default === true });
    return { element: box, labelled: true, read: () => box.checked };
  }
  if (spec.type === "array") {
    const boxes = (options(spec.items || {}) || []).map(([value, label]) => [value, h("input", { type: "checkbox", value, checked: (spec.default || []).includes(value) }), label]);
    const element = h("fieldset.choices", { id }, boxes.map(([, box, label]) => h("label.choice", {}, box, ` ${label}`)));
    return { element, read: () => boxes.filter(([, box]) => box.checked).map(([value]) => value) };
  }
  if (spec.type === "number" || spec.type === "integer") {
    const number = h("input", { id, type: "number", step: spec.type === "integer" ? "1" : "any", value: spec.default ?? "" });
    if (spec.minimum !== undefined) number.min = String(spec.minimum);
    if (spec.maximum !== undefined) number.max = String(spec.maximum);
    return { element: number, labelled: true, read: () => (number.value === "" ? undefined : Number(number.value)) };
  }
  const listed = options(spec);
  if (listed && listed.length <= FEW) {
    const radios = listed.map(([value, label]) => [value, h("input", { type: "radio", name: id, value, checked: spec.default === value }), label]);
    const element = h("fieldset.choices", { id }, radios.map(([, radio, label]) => h("label.choice", {}, radio, ` ${label}`)));
    return { element, read: () => radios.find(([, radio]) => radio.checked)?.[0] };
  }
  if (listed) {
    const select = h("select", { id }, h("option", { value: "" }, "—"), listed.map(([value, label]) => h("option", { value, selected: spec.default === value }, label)));
    return { element: select, labelled: true, read: () => select.value || undefined };
  }
  const type = INPUT_TYPES[spec.format] || "text";
  const text = h("input", { id, name, type, value: spec.default ?? "" });
  if (spec.maxLength !== undefined) text.maxLength = spec.maxLength;
  // A date and time is sent as the gate takes it: with its offset (the browser's field has none).
  const read = () => (text.value === "" ? undefined : type === "datetime-local" ? new Date(text.value).toISOString() : text.value);
  return { element: text, labelled: true, read };
}

// A question's answer, once given: the text or choice, the choices, or the form's fields.
export function answerView(value) {
  if (typeof value === "string") return h("div.answer", {}, "Answer: ", h("q.answer-value", {}, value));
  return h("div.answer", {}, "Answer:", jsonView(value));
}

// The first control that answers the question on `card` takes the keyboard (Enter on a card:
// a question is answered, never approved).
export function focusAnswer(card) {
  card.querySelector(".question button[data-action=choose], .question input, .question select, .question textarea")?.focus();
}
