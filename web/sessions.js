// The session list (`session/list`, newest activity first) and the "New session" form. Opening a session and
// showing a new one belong to the chat view, which initSessions is given as `open` and `created`.

import { byId, formatTime, h } from "./dom.js";
import { tryCall } from "./connection.js";
import { emit, on } from "./events.js";

const el = {
  list: byId("session-list"),
  empty: byId("session-list-empty"),
  form: byId("new-session"),
  button: byId("new-session-button"),
  agent: byId("new-agent"),
  mode: byId("new-mode"),
  refresh: byId("refresh-sessions"),
};

let entries = new Map(); // sessionId → session/list entry
let currentId = null; // the session the chat view shows (aria-current in the list)
let chat = { open: () => {}, created: async () => {} };

/** "live", "closed", "killed" (or "unknown" without an entry). */
export function sessionState(entry) {
  if (!entry) return "unknown";
  if (entry.killed) return "killed";
  return entry.live ? "live" : "closed";
}

/** The session/list entry of a session, if the last refresh listed it. */
export const sessionEntry = (id) => entries.get(id);

export async function refreshSessions() {
  const result = await tryCall("List sessions", "session/list", { includeKilled: true });
  if (!result) return;
  entries = new Map((result.sessions || []).map((s) => [s.sessionId, s]));
  render();
  emit("sessions-changed");
}

/** The chat view now shows `id` (or nothing). */
export function markCurrent(id) {
  currentId = id;
  render();
}

function render() {
  const sorted = Array.from(entries.values()).sort((a, b) =>
    String(b.lastActivity ?? b.createdAt ?? "").localeCompare(String(a.lastActivity ?? a.createdAt ?? "")),
  );
  el.list.replaceChildren(
    ...sorted.map((s) => {
      const st = sessionState(s);
      return h(
        "li",
        { class: `session-item state-${st}`, dataset: { sessionId: s.sessionId, state: st } },
        h(
          "button",
          {
            type: "button",
            class: "session-open",
            "aria-current": currentId === s.sessionId ? "true" : null,
            title: s.sessionId,
            on: { click: () => chat.open(s.sessionId) },
          },
          h("span", { class: "session-line" }, h("span", { class: "mono session-id", text: s.sessionId }), h("span", { class: `badge ${st}`, text: st })),
          h("span", {
            class: "session-sub muted small",
            text: `${s.agentAlias ?? "?"} · ${s.mode ?? "?"} · ${s.messageCount ?? 0} msg · ${formatTime(s.lastActivity ?? s.createdAt)}`,
          }),
        ),
      );
    }),
  );
  el.empty.hidden = sorted.length > 0;
}

async function newSession(event) {
  event.preventDefault();
  el.button.disabled = true;
  try {
    const params = { agentAlias: el.agent.value || "default", mode: el.mode.value || "acp" };
    const created = await tryCall("New session", "session/new", params);
    if (created) await chat.created(created);
  } finally {
    el.button.disabled = false;
  }
}

/** The agents to start a session with (the keys of `agents` in config/get); keeps the chosen one. */
function setAgents(agents) {
  const chosen = el.agent.value;
  el.agent.replaceChildren(...agents.map((a) => h("option", { value: a, text: a, selected: a === chosen })));
}

function reset() {
  entries.clear();
  currentId = null;
  el.list.replaceChildren();
}

/** `open(id)` shows a session; `created(result of session/new)` shows a session just started. */
export function initSessions({ open, created }) {
  chat = { open, created };
  el.form.addEventListener("submit", newSession);
  el.refresh.addEventListener("click", refreshSessions);
  on("agents", setAgents);
  on("signed-out", reset);
}
