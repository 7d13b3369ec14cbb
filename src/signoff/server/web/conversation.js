// A thread's conversation as the people deciding its calls read it — whatever made it: signoff's
// own runs, or another framework's run as its integration kept it at the pause. User and
// assistant text, each tool call with its arguments and the result it got, with the agent that
// spoke. One rendering for every origin: the server hands every thread over in one shape.

import { get } from "./api.js";
import { clear, h, jsonView } from "./dom.js";

// The messages as a transcript: a call's result goes under the call that asked for it.
export function transcript(messages, { agent = null } = {}) {
  const results = new Map(messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m]));
  const shown = new Set();
  const items = [];
  for (const message of messages) {
    if (message.role === "system") continue;
    if (message.role === "tool") {
      if (!shown.has(message.tool_call_id)) items.push(h("div.message.assistant", {}, result(message)));
      continue;
    }
    const who = message.role === "user" ? "user" : "assistant";
    const speaker = who === "user" ? "user" : message.agent || agent || "agent";
    const calls = message.tool_calls || [];
    items.push(
      h(
        `div.message.${who}`,
        { dataset: { role: message.role } },
        message.content ? h("div.bubble", {}, h("span.who", {}, speaker), message.content) : null,
        calls.map((call) => {
          shown.add(call.id);
          const answer = results.get(call.id);
          return h(
            "div.transcript-call",
            { dataset: { tool: call.name } },
            h("div.label", {}, h("span.who", {}, speaker), " calls ", h("b", {}, call.name)),
            jsonView(call.args),
            answer ? result(answer) : null,
          );
        }),
      ),
    );
  }
  return h("div.conversation.transcript", {}, items.length ? items : h("p.muted", {}, "No messages were kept for this thread."));
}

function result(message) {
  const label = `${message.is_error ? "Error" : "Result"}${message.name ? ` of ${message.name}` : ""}`;
  return h(`div.result${message.is_error ? ".error" : ""}`, {}, h("div.label", {}, label), h("pre.text", {}, message.content));
}

// The approval's conversation (`GET /v1/approvals/{id}/conversation`) into `holder`.
export async function showConversation(holder, approvalId) {
  const found = await get(`/approvals/${encodeURIComponent(approvalId)}/conversation`);
  clear(holder, transcript(found.messages, { agent: found.agent }));
  return found;
}

// A fold on a card: the conversation of the call's thread, read when opened.
export function conversationFold(approval) {
  const body = h("div.fold-body");
  const fold = h("details.conversation-fold", {}, h("summary", {}, "Conversation"), body);
  let read = false;
  fold.addEventListener("toggle", () => {
    if (!fold.open || read) return;
    read = true;
    showConversation(body, approval.id).catch((error) => {
      read = false;
      clear(body, h("p.form-error", { role: "alert" }, `The conversation did not load: ${error.message}`));
    });
  });
  return fold;
}
