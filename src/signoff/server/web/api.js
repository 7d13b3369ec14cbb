// The /v1 API and its server-sent events. The bearer token lives in this tab's session storage
// and travels in the Authorization header only; never a cookie, never a URL. With sign-on, the
// server's own HttpOnly session cookie goes along instead (same origin only).

import { notify } from "./dom.js";

const TOKEN_KEY = "signoff.token";

export class ApiError extends Error {
  constructor(status, body) {
    super(body.detail || body.error || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

function headers(extra = {}) {
  const found = token.get();
  return found ? { ...extra, Authorization: `Bearer ${found}` } : extra;
}

// A JSON request; an ApiError (with the server's JSON body) for anything but 2xx. `signal`
// aborts it (a long poll the page no longer waits for); `root` names a path outside /v1.
export async function api(method, path, body, { signal, root = false } = {}) {
  const init = { method, headers: headers(), cache: "no-store", signal, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(root ? path : `/v1${path}`, init);
  const text = await response.text();
  let data = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    data = { error: "InvalidResponse", detail: text.slice(0, 200) };
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// A POST that outlives the page (the browser sends it as the tab closes); no answer is read.
export function sendOnLeaving(path, body) {
  fetch(`/v1${path}`, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body),
    keepalive: true,
    credentials: "same-origin",
  }).catch(() => {});
}

export const get = (path, options) => api("GET", path, undefined, options);
export const post = (path, body, options) => api("POST", path, body, options);
export const put = (path, body) => api("PUT", path, body);

// How people sign in here through an OpenID provider — {name, login} — or null: this server
// has no sign-on (its people use bearer tokens).
export async function signOnInfo() {
  try {
    return (await api("GET", "/auth/info", undefined, { root: true })).sign_on;
  } catch {
    return null;
  }
}

export function query(params) {
  const pairs = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "");
  return pairs.length ? `?${new URLSearchParams(pairs)}` : "";
}

// Follow a server-sent event stream with fetch (EventSource cannot send a header): `onEvent`
// gets {id, type, data}. A broken stream reconnects after a second from the last id; a stream
// the server ends is over when `once` (a run's events end with the run), else reconnected.
// Returns a function that stops it.
export function follow(path, onEvent, { once = false, onOpen = () => {}, onGiveUp = giveUp } = {}) {
  const abort = new AbortController();
  let lastId = null;
  (async () => {
    while (!abort.signal.aborted) {
      let ended = false;
      try {
        const extra = lastId ? { "Last-Event-ID": lastId } : {};
        const response = await fetch(`/v1${path}`, {
          headers: headers({ Accept: "text/event-stream", ...extra }),
          signal: abort.signal,
          cache: "no-store",
          credentials: "same-origin",
        });
        if (!response.ok) throw new ApiError(response.status, {});
        onOpen();
        for await (const event of parse(response.body)) {
          if (event.id) lastId = event.id;
          onEvent(event);
        }
        ended = true;
      } catch (error) {
        if (abort.signal.aborted) return;
        if (error instanceof ApiError && error.status < 500 && error.status !== 429) {
          return onGiveUp(error);
        }
      }
      if (ended && once) return;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  return () => abort.abort();
}

function giveUp(error) {
  notify(`Live updates stopped (HTTP ${error.status}): reload the page.`, "error");
}

async function* parse(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replaceAll("\r\n", "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = { id: null, type: "message", data: "" };
      const data = [];
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") event.id = text;
        else if (field === "event") event.type = text;
        else if (field === "data") data.push(text);
      }
      if (!data.length) continue;
      try {
        event.data = JSON.parse(data.join("\n"));
      } catch {
        event.data = data.join("\n");
      }
      yield event;
    }
  }
}
