// The session list (`session/list`, newest activity first, in pages: "More" asks for the next with its cursor;
// the search box filters by title) and the "New session" form. Opening a session and showing a new one belong to
// the chat view, which initSessions is given as `open` and `created`.

import { byId, formatTime, h } from "./dom.js";
import { readInBackground, tryCall } from "./connection.js";
import { emit, on } from "./events.js";

const el = {
  list: byId("session-list"),
  empty: byId("session-list-empty"),
  form: byId("new-session"),
  button: byId("new-session-button"),
  agent: byId("new-agent"),
  mode: byId("new-mode"),
  refresh: byId("refresh-sessions"),
  search: byId("session-search"),
  more: byId("more-sessions"),
};

const PAGE = 50; // sessions per page; a refresh re-reads as many as are shown (at most 1000, the daemon's cap)
const SEARCH_DELAY_MS = 250;

let entries = new Map(); // sessionId → session/list entry, in the daemon's order
let nextCursor = null; // where the next page starts (null: all shown)
let searchTimer = null;
let currentId = null; // the session the chat view shows (aria-current in the list)
let chat = { open: (_id) => {}, created: async (_created) => {} };

/** "live", "closed", "killed" (or "unknown" without an entry). */
export function sessionState(entry) {
  if (!entry) return "unknown";
  if (entry.killed) return "killed";
  return entry.live ? "live" : "closed";
}

/** The session/list entry of a session, if the last refresh listed it. */
export const sessionEntry = (id) => entries.get(id);

function listParams() {
  const query = el.search.value.trim();
  return { includeKilled: true, ...(query ? { query } : {}) };
}

/** Re-read the list from its start: as many sessions as are shown now, at least a page. */
export async function refreshSessions() {
  const limit = Math.min(1000, Math.max(PAGE, entries.size));
  const result = await readInBackground("List sessions", "session/list", { ...listParams(), limit });
  if (!result) return;
  entries = new Map((result.sessions || []).map((s) => [s.sessionId, s]));
  nextCursor = result.nextCursor ?? null;
  render();
  emit("sessions-changed");
}

/** The next page, after the last one shown. */
async function loadMore() {
  if (!nextCursor) return;
  el.more.disabled = true;
  try {
    const params = { ...listParams(), limit: PAGE, cursor: nextCursor };
    const result = await tryCall("List sessions", "session/list", params);
    if (!result) return;
    for (const s of result.sessions || []) entries.set(s.sessionId, s);
    nextCursor = result.nextCursor ?? null;
    render();
    emit("sessions-changed");
  } finally {
    el.more.disabled = false;
  }
}

function searchChanged() {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => {
    entries = new Map(); // a new query starts from its first page
    refreshSessions();
  }, SEARCH_DELAY_MS);
}

/** The chat view now shows `id` (or nothing). */
export function markCurrent(id) {
  currentId = id;
  render();
}

function render() {
  const shown = Array.from(entries.values()); // the daemon's order: newest activity first
  el.list.replaceChildren(
    ...shown.map((s) => {
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
          s.title ? h("span", { class: "session-title small", text: s.title }) : null,
          h("span", {
            class: "session-sub muted small",
            text: `${s.agentAlias ?? "?"} · ${s.mode ?? "?"} · ${s.messageCount ?? 0} msg · ${formatTime(s.lastActivity ?? s.createdAt)}`,
          }),
        ),
      );
    }),
  );
  el.empty.textContent = el.search.value.trim() ? "No session title matches." : "No sessions yet.";
  el.empty.hidden = shown.length > 0;
  el.more.hidden = !nextCursor;
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
  nextCursor = null;
  currentId = null;
  el.search.value = "";
  el.more.hidden = true;
  el.list.replaceChildren();
}

/** `open(id)` shows a session; `created(result of session/new)` shows a session just started. */
export function initSessions({ open, created }) {
  chat = { open, created };
  el.form.addEventListener("submit", newSession);
  el.refresh.addEventListener("click", refreshSessions);
  el.more.addEventListener("click", loadMore);
  el.search.addEventListener("input", searchChanged);
  on("agents", setAgents);
  on("signed-out", reset);
}
