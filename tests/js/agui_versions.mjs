// A decision bound to the version of the call it was made on, through the official client,
// @ag-ui/client's HttpAgent (which checks the event stream as it applies it).
//   node agui_versions.mjs BASE_URL ASKER_TOKEN EDITOR_TOKEN APPROVER_TOKEN THREAD_ID
// The asker's turn "scale web to 3" is interrupted (a rule that needs two people); the editor
// edits the call through the REST API while the client shows version 1; the approver, at the same
// client, resumes with the interrupt's version — not taken, the run interrupts again with the call
// as edited — then resumes the new interrupt as the client now holds it. Prints what the client
// saw as one JSON object.
import { HttpAgent } from "@ag-ui/client";

const [base, asker, editor, approver, threadId] = process.argv.slice(2);
const bearer = (token) => ({ Authorization: `Bearer ${token}` });
const agent = new HttpAgent({ url: `${base}/agui/ops`, headers: bearer(asker), threadId });

async function run(parameters = {}) {
  const seen = { types: [], finished: undefined, error: undefined };
  await agent.runAgent(parameters, {
    onEvent({ event }) {
      seen.types.push(event.type);
    },
    onRunFinishedEvent({ event }) {
      seen.finished = event;
    },
    onRunErrorEvent({ event }) {
      seen.error = event.message;
    },
  });
  return seen;
}

// Each pending interrupt answered as its card would: approve, on the version it shows.
const approveAll = () =>
  agent.pendingInterrupts.map((i) => ({
    interruptId: i.id,
    status: "resolved",
    payload: { approved: true, version: i.metadata.version },
  }));

async function api(method, path, token, body) {
  const response = await fetch(`${base}/v1${path}`, {
    method,
    headers: { ...bearer(token), "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

agent.messages.push({ id: "u-1", role: "user", content: "scale web to 3" });
const asked = await run();
const [shown] = agent.pendingInterrupts;
const edit = { kind: "edit", args: { name: "web", replicas: 9 }, version: shown.metadata.version };
const edited = await api("POST", `/approvals/${shown.metadata.approvalId}/decision`, editor, edit);

agent.headers = bearer(approver);
const stale = await run({ resume: approveAll() });
const held = await api("GET", `/approvals/${shown.metadata.approvalId}`, approver);
const [again] = agent.pendingInterrupts;
const activity = structuredClone(
  agent.messages.find((m) => m.role === "activity" && m.id === again?.id)?.content ?? null,
);
const done = await run({ resume: approveAll() });

const card = (i) => ({
  id: i.id,
  message: i.message,
  version: i.metadata.version,
  args: i.metadata.args,
  requestedArgs: i.metadata.requestedArgs ?? null,
  schemaVersion: i.responseSchema.properties.version,
});
console.log(
  JSON.stringify({
    asked: { outcome: asked.finished.outcome.type, interrupt: card(shown) },
    edited: { status: edited.status, version: edited.body.version },
    stale: {
      types: stale.types,
      error: stale.error ?? null,
      outcome: stale.finished?.outcome?.type ?? null,
      interrupt: again ? card(again) : null,
      activity,
    },
    held: {
      status: held.body.status,
      version: held.body.version,
      votes: held.body.votes.map((v) => v.by),
    },
    done: {
      types: done.types,
      error: done.error ?? null,
      result: done.finished?.result ?? null,
      pending: agent.pendingInterrupts.length,
    },
    state: agent.state,
  }),
);
