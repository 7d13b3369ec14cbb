// signoff's AG-UI endpoint driven by the official client, @ag-ui/client's HttpAgent (which checks
// the event stream as it applies it).
//   node agui_client.mjs BASE_URL TOKEN THREAD_ID
// Turns with the "ops" agent of tests/protocols/a2a_agents.py: "delete a and b" is interrupted
// twice, resumed with an approval and a rejection; "scale web to 3" is interrupted and resumed
// with edited arguments (then that resume is sent again); "delete z" is interrupted and decided
// in the web inbox, and the client's next turn resumes it with new words. Prints what the client
// saw as one JSON object.
import { HttpAgent } from "@ag-ui/client";

const [base, token, threadId] = process.argv.slice(2);
const agent = new HttpAgent({
  url: `${base}/agui/ops`,
  headers: { Authorization: `Bearer ${token}` },
  threadId,
});

// One run: the event types in order, how it finished, and each MESSAGES_SNAPSHOT beside the
// conversation the client held when it came (its activity messages aside: a snapshot leaves them).
async function run(parameters = {}) {
  const seen = { types: [], finished: undefined, error: undefined, activities: {}, snapshots: [] };
  await agent.runAgent(parameters, {
    onEvent({ event }) {
      seen.types.push(event.type);
    },
    onMessagesSnapshotEvent({ event, messages }) {
      const held = messages.filter((m) => m.role !== "activity");
      seen.snapshots.push({ held: structuredClone(held), sent: event.messages });
    },
    onRunFinishedEvent({ event }) {
      seen.finished = event;
    },
    onRunErrorEvent({ event }) {
      seen.error = event.message;
    },
  });
  for (const message of agent.messages) {
    if (message.role === "activity") seen.activities[message.id] = message.content;
  }
  return seen;
}

const say = (content) =>
  agent.messages.push({ id: `u-${agent.messages.length}`, role: "user", content });

const report = {};

say("delete a and b");
const asked = await run();
const [first, second] = asked.finished.outcome.interrupts;
const answered = await run({
  resume: [
    { interruptId: first.id, status: "resolved", payload: { approved: true } },
    { interruptId: second.id, status: "resolved", payload: { approved: false, reason: "keep b" } },
  ],
});
report.batch = {
  asked: asked.types,
  outcome: asked.finished.outcome.type,
  interrupts: asked.finished.outcome.interrupts.map((i) => ({
    id: i.id,
    toolCallId: i.toolCallId,
    tool: i.metadata.tool,
    args: i.metadata.args,
    schema: i.responseSchema,
    expiresAt: i.expiresAt,
  })),
  answered: answered.types,
  snapshots: answered.snapshots,
  result: answered.finished.result,
  activities: Object.values(answered.activities).map((a) => [a.stage, a.decision, a.tool]),
};

say("scale web to 3");
const scaling = await run();
const [held] = scaling.finished.outcome.interrupts;
const edited = await run({
  resume: [
    {
      interruptId: held.id,
      status: "resolved",
      payload: { approved: true, editedArgs: { name: "web", replicas: 5 } },
    },
  ],
});
report.edit = {
  outcome: scaling.finished.outcome.type,
  result: edited.finished.result,
  snapshots: edited.snapshots,
};

// The same resume again is safe: nothing runs twice, the run ends as the task did.
const again = await run({
  resume: [{ interruptId: held.id, status: "resolved", payload: { approved: true } }],
});
report.replay = { types: again.types, error: again.error ?? null, snapshots: again.snapshots };

// Decided elsewhere: the inbox rejects the call while the client still holds its interrupt
// open; its next turn (the client insists) resumes it, with the person's new words.
say("delete z");
const held2 = await run();
const [open] = held2.finished.outcome.interrupts;
const api = { Authorization: `Bearer ${token}`, "content-type": "application/json" };
const decided = await fetch(`${base}/v1/approvals/${open.metadata.approvalId}/decision`, {
  method: "POST",
  headers: api,
  body: JSON.stringify({ kind: "reject", reason: "not z" }),
});
if (!decided.ok) throw new Error(`the inbox decision failed: ${decided.status}`);
for (let tries = 0; ; tries += 1) {
  const task = await (await fetch(`${base}/v1/runs/${open.metadata.taskId}`, { headers: api })).json();
  if (task.status === "completed") break;
  if (tries > 200) throw new Error("the task did not complete");
  await new Promise((resolve) => setTimeout(resolve, 50));
}
say("hello");
const next = await run({
  resume: [{ interruptId: open.id, status: "resolved", payload: { approved: true } }],
});
report.elsewhere = {
  error: next.error ?? null,
  result: next.finished?.result ?? null,
  activity: next.activities[open.id],
};

report.state = agent.state;
// The conversation the client ends with: each message's id and role, the calls an assistant
// message carries, the call a tool message answers.
report.messages = agent.messages.map((m) => ({
  id: m.id,
  role: m.role,
  calls: (m.toolCalls ?? []).map((c) => c.id),
  answers: m.toolCallId ?? null,
}));
console.log(JSON.stringify(report));
