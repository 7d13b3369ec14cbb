// The web inbox: sign in (through the server's OpenID provider when it has one, else with a
// bearer token, when the server asks for one), then route between the inbox, an approval, the
// runs, a run, the policy, the insights, the grants and the audit pages.
// Keyboard: Enter approves the selected card (a question's: moves to what answers it), Ctrl/Cmd+E
// edits it, J/K or the arrow keys move the selection, Esc closes a dialog.

import { ApiError, get, post, signOnInfo, token } from "./api.js";
import { approvalPage } from "./approval.js";
import { approve, editDialog, setUndoSeconds } from "./cards.js";
import { focusAnswer } from "./question.js";
import { clear, h, timeLeft } from "./dom.js";
import { auditPage } from "./audit.js";
import { grantsPage } from "./grants.js";
import { inbox } from "./inbox.js";
import { insightsPage } from "./insights.js";
import { policyPage } from "./policy.js";
import { runView } from "./run.js";
import { runs } from "./runs.js";

const main = document.getElementById("main");
const app = {
  me: null,
  agents: [],
  schemaFor(agentPath, tool) {
    const agent = app.agents.find((a) => a.path === agentPath);
    const found = agent?.tools.find((t) => t.name === tool);
    if (found) return found.parameters;
    for (const other of app.agents) {
      const match = other.tools.find((t) => t.name === tool);
      if (match) return match.parameters;
    }
    return null;
  },
  async reloadAgents() {
    const flat = [];
    const walk = (agent) => {
      flat.push(agent);
      agent.subagents.forEach(walk);
    };
    (await get("/agents")).items.forEach(walk);
    app.agents = flat;
  },
  cardsChanged() {
    select(selected() || pendingCards()[0] || null, { scroll: false });
  },
};

let leave = () => {};

async function start() {
  try {
    app.me = await get("/me");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      const signOn = token.get() ? null : await signOnInfo();
      return signOn ? signInWith(signOn) : signIn(error.message);
    }
    return clear(main, h("p.form-error", { role: "alert" }, `The server did not answer: ${error.message}`));
  }
  await app.reloadAgents();
  setUndoSeconds((await get("/web")).undo_seconds);
  clear(
    document.getElementById("who"),
    app.me.name,
    app.me.authenticated ? h("button.link", { type: "button", onclick: signOut }, "sign out") : null,
  );
  const scripted = [...new Set(app.agents.map((a) => a.model).filter((m) => /scripted/i.test(m)))];
  const banner = document.getElementById("banner");
  banner.hidden = !scripted.length;
  clear(banner, scripted.length ? `Demo: the agents run a ${scripted.join(", ")}; it follows simple patterns. Set SIGNOFF_MODEL and OPENAI_BASE_URL for a real model.` : null);
  window.addEventListener("hashchange", route);
  route();
}

function signIn(problem) {
  const input = h("input", { type: "password", name: "token", required: true, autocomplete: "off", "aria-label": "token" });
  const form = h(
    "form.sign-in",
    {},
    h("h1", {}, "Sign in"),
    h("p", {}, "This server needs a bearer token (see `auth:` in its config). It is kept in this tab only."),
    token.get() ? h("p.form-error", { role: "alert" }, problem) : null,
    input,
    h("button.primary", { type: "submit" }, "Sign in"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    token.set(input.value.trim());
    start();
  });
  clear(main, form);
  input.focus();
}

// Sign-on: the provider signs the person in, and the server keeps them signed in with a cookie
// this page never sees; it comes back to this very page.
function signInWith(signOn) {
  const next = `${location.pathname}${location.hash}`;
  const link = h("a.button.primary", { href: `${signOn.login}?${new URLSearchParams({ next })}` }, `Sign in with ${signOn.name}`);
  clear(main, h("section.sign-in", {}, h("h1", {}, "Sign in"), h("p", {}, "This server signs people in through their organisation's account."), link));
  link.focus();
}

async function signOut() {
  if (token.get()) {
    token.clear();
    return location.reload();
  }
  try {
    location.assign((await post("/auth/logout", undefined, { root: true })).next);
  } catch {
    location.reload(); // signed out already
  }
}

// The page is served at / (each page at its #/ route) and at /approvals/ID: that approval's own
// page, which notifications link to. Links name the root ("/#/runs"), so from an approval's page
// they open the others at /; a #/ route typed after /approvals/ID goes there too.
const OWN_PAGE = /^\/approvals\/([^/]+)\/?$/;

function route() {
  leave();
  leave = () => {};
  document.getElementById("dialog").close();
  const own = location.pathname.match(OWN_PAGE);
  if (own && location.hash.length > 1) return location.replace(`/${location.hash}`);
  const [path, search] = own ? [`/approvals/${own[1]}`, ""] : (location.hash.replace(/^#/, "") || "/").split("?");
  const params = new URLSearchParams(search || "");
  const parts = path.split("/").filter(Boolean).map(decoded);
  const section = parts[0] === "approvals" ? "inbox" : parts[0] || "inbox"; // an approval: the inbox's
  for (const link of document.querySelectorAll("nav a")) {
    link.classList.toggle("active", link.dataset.page === section);
  }
  const pages = {
    inbox: () => inbox(main, app, params),
    approvals: () => (parts[1] ? approvalPage(main, app, parts[1]) : inbox(main, app, params)),
    runs: () => (parts[1] ? runView(main, app, parts[1]) : runs(main, app)),
    policy: () => policyPage(main, app),
    insights: () => insightsPage(main, app, params),
    grants: () => grantsPage(main, app, params),
    audit: () => auditPage(main, app),
  };
  const page = pages[parts[0] || "inbox"] || pages.inbox;
  leave = page() || (() => {});
  document.title = `signoff — ${parts[0] === "approvals" && parts[1] ? "approval" : parts[0] || "inbox"}`;
}

// A path segment as it was written (one that is not valid percent-encoding stays as it is).
function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

// The selected card: the one the keyboard acts on.
function pendingCards() {
  return [...main.querySelectorAll("article.approval.status-pending:not(.waiting)")];
}

function selected() {
  const card = main.querySelector("article.approval.selected");
  return card && pendingCards().includes(card) ? card : null;
}

function select(card, { scroll = true } = {}) {
  for (const other of main.querySelectorAll("article.approval.selected")) {
    if (other !== card) other.classList.remove("selected");
  }
  if (!card) return;
  card.classList.add("selected");
  if (scroll) {
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: "nearest" });
  }
}

main.addEventListener("click", (event) => {
  const card = event.target.closest("article.approval.status-pending");
  if (card) select(card, { scroll: false });
});

// A closed dialog gives the keys back to the selected card: the browser would return focus to
// what had it before, which a live update may have replaced (and Enter would then press a tab).
document.getElementById("dialog").addEventListener("close", () => {
  const card = selected();
  if (card && !card.contains(document.activeElement)) card.focus({ preventScroll: true });
});

document.addEventListener("keydown", (event) => {
  if (document.getElementById("dialog").open || event.isComposing) return;
  // In a field, keys are the field's (Ctrl+E included: the end of the line on a Mac).
  if (event.target.closest?.("input, textarea, select, button, a, [contenteditable]")) return;
  const card = selected() || pendingCards()[0] || null; // a decided card hands on at once
  const modified = event.ctrlKey || event.metaKey || event.altKey;
  const question = card?._approval.kind === "question";
  if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "e") {
    if (!card || question) return;
    event.preventDefault(); // not the browser's own search shortcut
    editDialog(card, card._approval, card._context);
    return;
  }
  if (modified) return;
  if (event.key === "Enter" && card) {
    event.preventDefault();
    if (question) focusAnswer(card);
    else approve(card, card._approval, card._context);
  } else if (event.key === "ArrowDown" || event.key === "j" || event.key === "ArrowUp" || event.key === "k") {
    const cards = pendingCards();
    if (!cards.length) return;
    event.preventDefault();
    const step = event.key === "ArrowDown" || event.key === "j" ? 1 : -1;
    const at = cards.indexOf(card);
    select(cards[(at + step + cards.length) % cards.length]);
  }
});

// Deadlines count down.
setInterval(() => {
  for (const left of main.querySelectorAll(".deadline[data-expires-at]")) {
    left.textContent = timeLeft(left.dataset.expiresAt);
  }
}, 1000);

start();
