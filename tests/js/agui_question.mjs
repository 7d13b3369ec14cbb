// A question over signoff's AG-UI endpoint, driven by the official client, @ag-ui/client's
// HttpAgent (which checks the event stream as it applies it).
//   node agui_question.mjs BASE_URL TOKEN THREAD_ID
// The "ops" agent of tests/protocols/a2a_agents.py asks "Which region?" (eu-west or us-east):
// the client resumes its interrupt with an answer that does not fit, then with one that does,
// then with another answer. Prints what the client saw as one JSON object.
import { HttpAgent } from "@ag-ui/client";

const [base, token, threadId] = process.argv.slice(2);
const agent = new HttpAgent({
  url: `${base}/agui/ops`,
  headers: { Authorization: `Bearer ${token}` },
  threadId,
});

async function run(parameters = {}) {
  const seen = { finished: null, error: null, activities: {} };
  await agent.runAgent(parameters, {
    onRunFinishedEvent({ event }) {
      seen.finished = event;
    },
    onRunErrorEvent({ event }) {
      seen.error = { message: event.message, code: event.code };
    },
  });
  for (const message of agent.messages) {
    if (message.role === "activity") seen.activities[message.id] = message.content;
  }
  return seen;
}

const answer = (id, value) => ({
  resume: [{ interruptId: id, status: "resolved", payload: { answer: value } }],
});

agent.messages.push({ id: "u-1", role: "user", content: "ask Which region?" });
const asked = await run();
const [interrupt] = asked.finished.outcome.interrupts;
const misfit = await run(answer(interrupt.id, "mars"));
const answered = await run(answer(interrupt.id, "us-east"));
const again = await run(answer(interrupt.id, "eu-west"));
console.log(
  JSON.stringify({
    outcome: asked.finished.outcome.type,
    interrupt,
    activity: asked.activities[interrupt.id],
    misfit: misfit.error,
    result: answered.finished?.result ?? null,
    answeredError: answered.error,
    settled: answered.activities[interrupt.id],
    again: again.error,
  }),
);
