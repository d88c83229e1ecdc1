// The chat view: which session is on screen, its head (state, agent, Close / Kill / Delete behind a
// confirmation bar), the composer (`session/prompt`, `session/cancel`), and the daemon's traffic for sessions
// (`session/update` notifications and `elicitation/create` requests), routed to each session's SessionView.

import { expireQuestions } from "./approvals.js";
import { initBranching, numberPrompts, render as renderBranching } from "./branching.js";
import { byId, formatTime, h } from "./dom.js";
import { call, connected, daemonRestarted, readInBackground, tryCall } from "./connection.js";
import { reportError, showInline } from "./errors.js";
import { on } from "./events.js";
import { follow, redrawJoined, showPrompt } from "./follow.js";
import { initModels, showModel } from "./models.js";
import { ConnectionError, RpcError } from "./rpc.js";
import { markCurrent, refreshSessions, sessionEntry, sessionState } from "./sessions.js";
import { refreshStatus } from "./status.js";
import { selectTab, tabShown } from "./tabs.js";
import { SessionView } from "./transcript.js";
import { formatUsage } from "./usage.js";

const el = {
  workspace: byId("view-sessions"),
  empty: byId("chat-empty"),
  pane: byId("chat-pane"),
  back: byId("back"),
  title: byId("chat-title"),
  meta: byId("chat-meta"),
  reload: byId("reload-session"),
  close: byId("close-session"),
  kill: byId("kill-session"),
  remove: byId("delete-session"),
  confirmBar: byId("confirm-bar"),
  confirmText: byId("confirm-text"),
  confirmYes: byId("confirm-yes"),
  confirmNo: byId("confirm-no"),
  host: byId("transcript-host"),
  composer: byId("composer"),
  prompt: byId("prompt"),
  send: byId("send"),
  cancel: byId("cancel"),
  note: byId("composer-note"),
};

const views = new Map(); // sessionId → SessionView, for the page's lifetime (or until signed out)
let current = null; // the SessionView on screen
let pendingAction = null; // {action, view} awaiting the confirmation bar

function getView(id) {
  let view = views.get(id);
  if (!view) {
    view = new SessionView(id, { changed: updateComposer, configured: renderChatHead });
    views.set(id, view);
  }
  return view;
}

function setCurrent(view) {
  if (current && current !== view) current.hide();
  current = view;
}

/**
 * Show a session. A live one is followed (follow.js: session/attach, its transcript, then every update whoever
 * prompts; shown again, it carries on from the last seq shown). Another is only read (session/messages).
 */
export async function openSession(id, { fresh = false } = {}) {
  const view = getView(id);
  setCurrent(view);
  hideConfirm();
  el.empty.hidden = true;
  el.pane.hidden = false;
  el.workspace.classList.add("session-open");
  view.show(el.host);
  renderChatHead(view);
  markCurrent(id);
  updateComposer();
  if (fresh) return;
  const entry = sessionEntry(id);
  if (entry && !entry.live) view.attached = false; // closed or killed since: the daemon dropped its followers
  // A followed view is up to date (every update has been arriving): shown again, it is not read again.
  if (!view.attached) {
    if (entry?.live) await follow(view);
    else if (!view.running) await view.load();
  }
  view.scrollToEnd();
  refreshUsage(view);
}

/** A session the new-session form just started (the result of session/new): show it, empty, ready to type. */
export async function adoptSession(created) {
  const view = getView(created.sessionId);
  view.info = { ...created, live: true, killed: false };
  view.renderHistory([], 0);
  view.loaded = true;
  view.attached = true; // session/new follows the session it starts
  view.seq = 0; // its first update is seq 1
  await refreshSessions();
  await openSession(created.sessionId, { fresh: true });
  refreshStatus();
  el.prompt.focus();
}

/**
 * After (re)connecting: follow again every session that was followed (or ran a turn) when the connection dropped,
 * from the last seq each showed — the daemon replays what was missed (R-MULTI-2) — then show the current one.
 */
export async function resumeViews() {
  const dropped = [...views.values()].filter((view) => view.following);
  if (current) dropped.sort((a, b) => Number(b === current) - Number(a === current)); // the one on screen first
  for (const view of dropped) {
    view.following = false;
    const entry = sessionEntry(view.id);
    // Not listed (past the first page): it was live when the connection dropped, so follow it again.
    if (entry ? entry.live : true) await follow(view);
    else if (view.running && daemonRestarted() && !entry.killed && (await follow(view))) {
      // The daemon stopped mid-turn, so the turn was interrupted. Attaching brought the session back, which
      // recovers the turn (the `interrupted` marker, docs/durability.md), and the transcript was read with it.
    } else {
      // Closed, killed, or the daemon restarted: its turn is over; the transcript says how it ended.
      if (view.running) view.failTurn(view.turn, new ConnectionError("The session is no longer live; its turn ended while this page was disconnected."));
      await view.load();
    }
    if (!view.running) numberPrompts(view); // a prompt whose numbering read the drop cut off gets its button
  }
  if (current) await openSession(current.id);
}

function renderChatHead(view) {
  if (current !== view) return;
  const entry = sessionEntry(view.id);
  const st = entry ? sessionState(entry) : view.info?.killed ? "killed" : "live";
  el.title.textContent = view.id;
  // The settings a config_changed (or this page's choice) brought win over the list's, which may be older.
  const agent = view.settings?.agentAlias ?? entry?.agentAlias ?? view.info?.agentAlias;
  showModel(view.id, agent, view.settings?.model ?? entry?.model ?? view.info?.model, { disabled: st === "killed" });
  el.meta.replaceChildren(
    h("span", { class: `badge ${st}`, id: "chat-state", text: st }),
    ` agent ${agent ?? "?"} · ${entry?.mode ?? view.info?.mode ?? "?"}`,
    entry ? ` · ${entry.messageCount ?? 0} messages · last activity ${formatTime(entry.lastActivity ?? entry.createdAt)}` : "",
    view.usage ? h("span", { id: "chat-usage", text: ` · session ${formatUsage(view.usage)}` }) : "",
  );
  el.close.disabled = st !== "live";
  el.kill.disabled = st === "killed";
  updateComposer();
}

function isKilled(view) {
  const entry = sessionEntry(view.id);
  return entry ? Boolean(entry.killed) : Boolean(view.info?.killed);
}

function updateComposer() {
  const view = current;
  if (!view) return;
  const online = connected();
  const killed = isKilled(view);
  el.send.disabled = !online || killed || view.running;
  el.prompt.disabled = !online || killed;
  el.cancel.disabled = !online || !view.running;
  el.reload.disabled = view.running;
  renderBranching(view, { online, killed }); // undo, the steer box, the parent of a fork
  if (!online && view.running) showInline(el.note, "Disconnected. If the daemon still runs, so does the turn, and reconnecting shows the rest of it here; if the daemon stopped, the turn was interrupted.", "note");
  else if (killed) showInline(el.note, "This session was killed: its history is read-only and it can never be resumed.", "note");
  else if (view.running) showInline(el.note, "The agent is working… Cancel stops the turn.", "note");
  else showInline(el.note, "", "note");
}

// ------------------------------------------------------------------------------------------------ close, kill, delete

const ACTIONS = {
  close: {
    label: "Close session",
    text: (id) => `Close ${id}? The live session ends (a running turn is cancelled); its durable history stays and can be resumed.`,
  },
  kill: {
    label: "Kill session",
    text: (id) => `Kill ${id}? The turn is cancelled and the session can never be resumed; its history stays readable.`,
  },
  delete: {
    label: "Delete session",
    text: (id) => `Delete ${id} and its history? This cannot be undone.`,
  },
};

function askConfirm(action) {
  const view = current;
  if (!view) return;
  pendingAction = { action, view };
  el.confirmText.textContent = ACTIONS[action].text(view.id);
  el.confirmYes.textContent = ACTIONS[action].label;
  el.confirmYes.dataset.action = action;
  el.confirmBar.hidden = false;
  el.confirmYes.focus();
}

function hideConfirm() {
  pendingAction = null;
  el.confirmBar.hidden = true;
}

async function confirmAction() {
  if (!pendingAction) return;
  const { action, view } = pendingAction;
  hideConfirm();
  const method = /** @type {"session/close" | "session/kill" | "session/delete"} */ (`session/${action}`);
  const result = await tryCall(ACTIONS[action].label, method, { sessionId: view.id });
  if (!result) return;
  view.attached = false;
  if (action === "kill") {
    view.info = { ...(view.info || {}), killed: true, live: false };
    view.note(`Session killed. Its history stays readable; it can never be resumed.`);
  } else if (action === "close") {
    view.info = { ...(view.info || {}), live: false };
    view.note("Session closed. Send a message to resume it (ACP sessions).");
  }
  if (action === "delete") {
    views.delete(view.id);
    view.closePending("The session was deleted.");
    if (current === view) {
      view.hide();
      current = null;
      markCurrent(null);
      el.pane.hidden = true;
      el.empty.hidden = false;
      el.workspace.classList.remove("session-open");
    }
  }
  await refreshSessions();
  refreshStatus();
}

// ------------------------------------------------------------------------------------------------ composer

async function sendPrompt(event) {
  event.preventDefault();
  const view = current;
  const text = el.prompt.value;
  if (!view || !text.trim() || view.running) return;
  el.prompt.value = "";
  const turn = view.startTurn(text);
  updateComposer();
  try {
    const result = await call("session/prompt", { sessionId: view.id, prompt: text });
    view.finishTurn(turn, result?.stopReason, result?.content);
  } catch (err) {
    // A dropped connection loses only the answer: the turn runs on (R-MULTI-3), and the reconnect resumes it.
    if (err instanceof ConnectionError && err.dropped) return;
    reportError("Send message", err);
    view.failTurn(turn, err);
  } finally {
    updateComposer();
    if (connected()) refreshSessions(); // else the reconnect reads the list again
  }
}

async function cancelTurn() {
  const view = current;
  if (!view) return;
  el.cancel.disabled = true;
  const result = await tryCall("Cancel turn", "session/cancel", { sessionId: view.id });
  if (!result) updateComposer();
}

// ------------------------------------------------------------------------------------------------ daemon → panel

export function onDaemonNotification(method, params) {
  if (method !== "session/update" || !params || typeof params.sessionId !== "string") return;
  const view = views.get(params.sessionId);
  if (!view) return; // a session this page has not opened
  const before = view.turn;
  const joined = Boolean(before?.joined); // joined mid-way without its start: redrawn once it ends (follow.js)
  let shown = false;
  try {
    shown = view.receive(params);
  } catch (err) {
    reportError("Showing an update", err);
  }
  if (view.turn && view.turn !== before && view.turn.note) showPrompt(view, view.turn); // prompted elsewhere
  if (shown && params.type === "approval_request") bringForward(view);
  if (shown && params.type === "turn_complete" && joined) redrawJoined(view);
  if (params.type === "turn_complete") refreshSessions();
  if (params.type === "turn_complete") refreshUsage(view);
  if (params.type === "turn_complete") numberPrompts(view); // its prompt can be branched from now
}

/** The session's total tokens and cost (session/usage, R-MODEL-5), shown in the chat head. */
async function refreshUsage(view) {
  const result = await readInBackground("Read usage", "session/usage", { sessionId: view.id });
  if (!result) return;
  view.usage = result.total;
  renderChatHead(view);
}

export async function onDaemonRequest(method, params) {
  if (method !== "elicitation/create") {
    throw new RpcError({ code: -32601, message: `Method not found: ${method}`, data: { kind: "method_not_found" } });
  }
  const sessionId = typeof params.sessionId === "string" ? params.sessionId : null;
  if (!sessionId) return { action: "decline" };
  const view = getView(sessionId);
  const answer = view.elicit(params);
  bringForward(view);
  return answer;
}

/** A turn waits for the user (approval, question): show that session if another view is on screen. */
function bringForward(view) {
  if (current === view && tabShown("sessions")) return;
  selectTab("sessions");
  if (current !== view) openSession(view.id);
  else el.workspace.classList.add("session-open");
}

// ------------------------------------------------------------------------------------------------ wiring

function onLost() {
  for (const view of views.values()) {
    // Turns and approvals outlive the connection (R-MULTI-3): keep them on screen for resumeViews. A question is
    // asked of a connection, so it is gone with this one.
    view.following ||= view.attached || view.running;
    view.attached = false;
    expireQuestions(view.id, "The connection to the daemon was lost.");
  }
  updateComposer();
}

function onSignedOut() {
  for (const view of views.values()) view.closePending("Signed out.");
  views.clear();
  current?.hide();
  current = null;
  el.host.replaceChildren();
  el.pane.hidden = true;
  el.empty.hidden = false;
}

export function initChat() {
  el.back.addEventListener("click", () => el.workspace.classList.remove("session-open"));
  el.reload.addEventListener("click", () => current && !current.running && current.load());
  for (const button of [el.close, el.kill, el.remove]) {
    button.addEventListener("click", (event) => askConfirm(event.currentTarget.dataset.action));
  }
  el.confirmYes.addEventListener("click", confirmAction);
  el.confirmNo.addEventListener("click", hideConfirm);
  el.composer.addEventListener("submit", sendPrompt);
  el.prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      el.composer.requestSubmit();
    }
  });
  el.cancel.addEventListener("click", cancelTurn);
  initBranching({ current: () => current, open: (id) => openSession(id), refresh: refreshSessions, entry: sessionEntry });
  initModels({
    onChosen: (id, settings) => {
      const view = views.get(id);
      if (view) {
        view.settings = settings;
        renderChatHead(view);
      }
      refreshSessions();
    },
  });
  on("connected", updateComposer);
  on("lost", onLost);
  on("signed-out", onSignedOut);
  on("sessions-changed", () => {
    if (!current) return;
    renderChatHead(current);
    // The session on screen came to life (this page's prompt rehydrated it, or another client did): follow it.
    if (sessionEntry(current.id)?.live && !current.attached && connected()) follow(current);
  });
}
