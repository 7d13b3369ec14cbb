// signoff's A2A server driven by the official JavaScript client, @a2a-js/sdk.
//   node a2a_client.mjs BASE_URL TOKEN BINDING [ask TEXT | approve TASK_ID]
// BINDING is JSONRPC or HTTP+JSON. Without a mode it runs four exchanges with the "ops" agent of
// tests/protocols/a2a_agents.py; `ask` starts a task and `approve` decides one (a server restart
// may come in between). It prints what the client saw as one JSON object; the Python test checks it.
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";

const [base, token, binding, mode, argument] = process.argv.slice(2);
const ROLE_USER = 1;
const STATES = {
  2: "working",
  3: "completed",
  4: "failed",
  6: "input-required",
};

// Every request carries the bearer token; the agent card is public.
const authed = (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [
      new JsonRpcTransportFactory({ fetchImpl: authed }),
      new RestTransportFactory({ fetchImpl: authed }),
    ],
    preferredTransports: [binding],
  }),
);
const client = await factory.createFromUrl(`${base}/a2a/ops/.well-known/agent-card.json`, "");

let sent = 0;
function request(part, taskId = "") {
  sent += 1;
  return {
    tenant: "",
    message: {
      messageId: `js-${process.pid}-${sent}`,
      contextId: "",
      taskId,
      role: ROLE_USER,
      parts: [part],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}
const text = (value) => ({ content: { $case: "text", value } });
const data = (value) => ({ content: { $case: "data", value } });

// Stream a message; return the task id, the states seen in order, and the last status message.
async function stream(req) {
  const seen = { taskId: undefined, states: [], message: undefined, artifacts: [] };
  for await (const event of client.sendMessageStream(req)) {
    const { $case, value } = event.payload ?? {};
    if ($case === "task") {
      seen.taskId = value.id;
      seen.states.push(STATES[value.status.state]);
      seen.message = value.status.message;
    } else if ($case === "statusUpdate") {
      seen.states.push(STATES[value.status.state]);
      seen.message = value.status.message;
    } else if ($case === "artifactUpdate") {
      seen.artifacts.push(value.artifact);
    }
  }
  return seen;
}

const dataParts = (message) =>
  (message?.parts ?? []).filter((p) => p.content?.$case === "data").map((p) => ({
    data: p.content.value,
    metadata: p.metadata,
  }));
const textOf = (message) =>
  (message?.parts ?? [])
    .filter((p) => p.content?.$case === "text")
    .map((p) => p.content.value)
    .join("");

if (mode === "ask") {
  const asked = await stream(request(text(argument)));
  console.log(JSON.stringify({ taskId: asked.taskId, states: asked.states }));
  process.exit(0);
}
if (mode === "approve") {
  const before = await client.getTask({ tenant: "", id: argument, historyLength: undefined });
  const done = await stream(request(data({ decision_type: "approve" }), argument));
  console.log(
    JSON.stringify({ before: STATES[before.status.state], states: done.states, reply: textOf(done.message) }),
  );
  process.exit(0);
}

const report = {};

// 1. ask → input-required → approve (kagent's decision) → completed.
{
  const asked = await stream(request(text("delete web-1")));
  const confirmations = dataParts(asked.message).filter(
    (p) => p.data?.name === "adk_request_confirmation",
  );
  const done = await stream(request(data({ decision_type: "approve" }), asked.taskId));
  const task = await client.getTask({ tenant: "", id: asked.taskId, historyLength: undefined });
  report.approve = {
    asked: asked.states,
    confirmations,
    decided: done.states,
    answer: done.artifacts.map((a) => a.parts.map((p) => p.content.value).join("")),
    finalState: STATES[task.status.state],
    historyMarks: task.history.map((m) => m.metadata?.["signoff.hitl"] ?? null),
  };
}

// 2. reject with a reason (blocking sends this time) → the reply mentions it.
{
  const asked = await client.sendMessage(request(text("delete web-2")));
  const done = await client.sendMessage(
    request(data({ decision_type: "deny", reason: "web-2 serves live traffic" }), asked.id),
  );
  report.reject = {
    asked: STATES[asked.status.state],
    decided: STATES[done.status.state],
    reply: textOf(done.status.message),
  };
}

// 3. a mixed batch: one allowed call runs, two are held; approve one and reject the other.
{
  const asked = await stream(request(text("delete web-3 and web-4")));
  const listing = dataParts(asked.message).find((p) => p.data?.type === "signoff.approvals");
  const [first, second] = listing.data.approvals;
  const decisions = {
    [first.approvalId]: { kind: "approve" },
    [second.approvalId]: { kind: "reject", reason: "keep web-4" },
  };
  const done = await stream(request(data({ decisions }), asked.taskId));
  report.batch = {
    asked: asked.states.at(-1),
    held: listing.data.approvals.map((a) => [a.tool, a.args.name]),
    decided: done.states,
    reply: textOf(done.message),
  };
}

// 4. a partial decision is refused with an A2A error, and the task still waits.
{
  const asked = await client.sendMessage(request(text("delete web-5 and web-6")));
  const listing = dataParts(asked.status.message).find((p) => p.data?.type === "signoff.approvals");
  const only = { [listing.data.approvals[0].approvalId]: { kind: "approve" } };
  let error;
  try {
    await client.sendMessage(request(data({ decisions: only }), asked.id));
  } catch (caught) {
    error = { name: caught.constructor.name, message: caught.message };
  }
  const task = await client.getTask({ tenant: "", id: asked.id, historyLength: undefined });
  report.partial = { error, state: STATES[task.status.state] };
}

console.log(JSON.stringify(report));
