// The zeroclaw web control panel (SPEC R-GW-5). Plain ES modules, no framework, nothing fetched from elsewhere.
// It talks to the daemon only through the public WebSocket JSON-RPC surface (`/rpc`); see docs/panel.md.
//
// Rules kept throughout: every daemon-provided string is rendered as text (dom.js never uses innerHTML);
// every failed call is shown in words (code, kind, message, context such as data.index) — never swallowed.

import { $, $$, append, formatDuration, formatTime, h, pretty, uid } from "./dom.js";
import { ConnectionError, RpcClient, RpcError, describeError, rpcUrl } from "./rpc.js";

const TOKEN_KEY = "zeroclaw.token";
const REFRESH_MS = 15000;
const HISTORY_PAGE = 200;
const CLIENT_INFO = { name: "zeroclaw-panel", version: "1" };

const state = {
  rpc: null,
  init: null, // the initialize result
  status: null,
  sessions: new Map(), // sessionId → session/list entry
  views: new Map(), // sessionId → SessionView
  current: null, // the SessionView shown
  agents: ["default"],
  config: null,
  timer: null,
  signingOut: false,
  pendingElicitations: new Set(),
};

// ------------------------------------------------------------------------------------------------ errors

let lastError = { text: "", at: 0 };

/** Show an error in the error list (role=alert). `context` says what was being done. */
function reportError(context, err) {
  const text = `${context}: ${describeError(err)}`;
  const now = Date.now();
  if (text === lastError.text && now - lastError.at < 5000) return; // the same failure of a periodic refresh
  lastError = { text, at: now };
  const list = $("#errors");
  const item = h(
    "li",
    { class: "error-item" },
    h("span", { class: "error-message", text }),
    h("button", { type: "button", class: "ghost small", "aria-label": "Dismiss", text: "×", on: { click: () => item.remove() } }),
  );
  list.append(item);
  while (list.children.length > 6) list.firstElementChild.remove();
}

function showInline(el, text, kind = "error") {
  el.textContent = text;
  el.classList.toggle("error-text", kind === "error");
  el.classList.toggle("ok-text", kind === "ok");
  el.hidden = !text;
}

// ------------------------------------------------------------------------------------------------ sign in

function showSignIn(message = "") {
  $("#app-view").hidden = true;
  $("#signin-view").hidden = false;
  showInline($("#signin-error"), message);
  $("#token").focus();
}

async function signIn(token) {
  const button = $("#signin-button");
  button.disabled = true;
  showInline($("#signin-error"), "");
  try {
    await connect(token);
    sessionStorage.setItem(TOKEN_KEY, token);
    $("#token").value = "";
    $("#signin-view").hidden = true;
    $("#app-view").hidden = false;
    await loadEverything();
  } catch (err) {
    sessionStorage.removeItem(TOKEN_KEY);
    disconnect();
    showSignIn(`Sign-in failed. ${describeError(err)}`);
  } finally {
    button.disabled = false;
  }
}

/** Open `/rpc` and call `initialize` with the token; announce that this client answers elicitation. */
async function connect(token) {
  const rpc = new RpcClient(rpcUrl(), {
    onNotification,
    onRequest,
    onClose: (event) => onConnectionLost(rpc, event),
    onStrayError: (err) => reportError("The daemon reported", err),
    onProtocolError: (text) => reportError("Protocol", new ConnectionError(text)),
  });
  await rpc.open();
  let init;
  try {
    init = await rpc.call(
      "initialize",
      { protocolVersion: 1, authToken: token, clientInfo: CLIENT_INFO, clientCapabilities: { elicitation: {} } },
      { timeoutMs: 15000 },
    );
  } catch (err) {
    rpc.close();
    throw err;
  }
  if (state.rpc && state.rpc !== rpc) state.rpc.close();
  state.rpc = rpc;
  state.init = init;
  state.signingOut = false;
  $("#conn-banner").hidden = true;
  const principal = init.principal || {};
  $("#whoami").replaceChildren(
    h("span", { class: "mono", text: principal.id ?? "unknown" }),
    principal.admin ? h("span", { class: "badge admin", text: "admin" }) : null,
  );
  $("#whoami").title = `Signed in as ${principal.id ?? "unknown"}`;
  clearInterval(state.timer);
  state.timer = setInterval(() => {
    refreshStatus();
    refreshSessions();
  }, REFRESH_MS);
  updateComposer();
}

function disconnect() {
  clearInterval(state.timer);
  state.timer = null;
  if (state.rpc) {
    state.signingOut = true;
    state.rpc.close();
  }
  state.rpc = null;
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  disconnect();
  for (const view of state.views.values()) view.closePending("Signed out.");
  state.views.clear();
  state.sessions.clear();
  state.current = null;
  state.init = null;
  $("#session-list").replaceChildren();
  $("#transcript-host").replaceChildren();
  $("#chat-pane").hidden = true;
  $("#chat-empty").hidden = false;
  $("#errors").replaceChildren();
  showSignIn("Signed out.");
}

function onConnectionLost(rpc, event) {
  if (rpc !== state.rpc || state.signingOut) return;
  clearInterval(state.timer);
  for (const view of state.views.values()) {
    view.attached = false;
    view.closePending("The connection to the daemon was lost.");
  }
  $("#conn-banner-text").textContent = `Connection to the daemon lost (WebSocket close code ${event.code}${event.reason ? `: ${event.reason}` : ""}).`;
  $("#conn-banner").hidden = false;
  $("#status-line").textContent = "disconnected";
  updateComposer();
}

async function reconnect() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) {
    showSignIn("Sign in again.");
    return;
  }
  try {
    await connect(token);
    await loadEverything();
  } catch (err) {
    reportError("Reconnect", err);
    if (err instanceof RpcError && err.code === -32010) {
      sessionStorage.removeItem(TOKEN_KEY);
      showSignIn(`Sign in again. ${describeError(err)}`);
    }
  }
}

async function loadEverything() {
  await Promise.all([refreshStatus(), loadConfig(), refreshSessions()]);
  if (state.current) await openSession(state.current.id);
}

/** A call that reports its failure and resolves to `undefined` instead of throwing. */
async function tryCall(context, method, params) {
  if (!state.rpc) {
    reportError(context, new ConnectionError("Not connected to the daemon"));
    return undefined;
  }
  try {
    return await state.rpc.call(method, params);
  } catch (err) {
    reportError(context, err);
    return undefined;
  }
}

// ------------------------------------------------------------------------------------------------ status

async function refreshStatus() {
  const status = await tryCall("Daemon status", "status", {});
  if (!status) return;
  state.status = status;
  const live = status.activeSessions ?? 0;
  const conns = status.connections ?? 0;
  $("#status-line").replaceChildren(
    h("span", { class: "stat", text: `v${status.serverVersion ?? "?"}` }),
    h("span", { class: "stat", text: `up ${formatDuration(status.uptimeSecs)}` }),
    h("span", { class: "stat", text: `${live} live session${live === 1 ? "" : "s"}` }),
    h("span", { class: "stat", text: `${conns} connection${conns === 1 ? "" : "s"}` }),
  );
  const rows = [
    ["Version", status.serverVersion],
    ["Protocol", status.protocolVersion],
    ["PID", status.pid],
    ["Uptime", formatDuration(status.uptimeSecs)],
    ["Live sessions", live],
    ["Connections", conns],
    ["Endpoint", status.endpoint],
    ["Gateway", status.gateway?.url ?? "off"],
    ["Data dir", status.dataDir],
    ["Config file", status.configFile],
    ["Signed in as", `${state.init?.principal?.id ?? "?"}${state.init?.principal?.admin ? " (admin)" : ""}`],
  ];
  $("#status-details").replaceChildren(...rows.flatMap(([k, v]) => [h("dt", { text: k }), h("dd", { class: "mono", text: v ?? "—" })]));
}

// ------------------------------------------------------------------------------------------------ sessions list

function sessionState(entry) {
  if (!entry) return "unknown";
  if (entry.killed) return "killed";
  return entry.live ? "live" : "closed";
}

async function refreshSessions() {
  const result = await tryCall("List sessions", "session/list", { includeKilled: true });
  if (!result) return;
  state.sessions = new Map((result.sessions || []).map((s) => [s.sessionId, s]));
  renderSessionList();
  if (state.current) renderChatHead(state.current);
}

function renderSessionList() {
  const list = $("#session-list");
  const entries = Array.from(state.sessions.values()).sort((a, b) =>
    String(b.lastActivity ?? b.createdAt ?? "").localeCompare(String(a.lastActivity ?? a.createdAt ?? "")),
  );
  list.replaceChildren(
    ...entries.map((s) => {
      const st = sessionState(s);
      const current = state.current?.id === s.sessionId;
      return h(
        "li",
        { class: `session-item state-${st}`, dataset: { sessionId: s.sessionId, state: st } },
        h(
          "button",
          {
            type: "button",
            class: "session-open",
            "aria-current": current ? "true" : null,
            title: s.sessionId,
            on: { click: () => openSession(s.sessionId) },
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
  $("#session-list-empty").hidden = entries.length > 0;
}

async function newSession(event) {
  event.preventDefault();
  const button = $("#new-session-button");
  button.disabled = true;
  try {
    const params = { agentAlias: $("#new-agent").value || "default", mode: $("#new-mode").value || "acp" };
    const created = await tryCall("New session", "session/new", params);
    if (!created) return;
    const view = getView(created.sessionId);
    view.info = { ...created, live: true, killed: false };
    view.renderHistory([], 0);
    view.loaded = true;
    await refreshSessions();
    await openSession(created.sessionId, { fresh: true });
    refreshStatus();
    $("#prompt").focus();
  } finally {
    button.disabled = false;
  }
}

function getView(id) {
  let view = state.views.get(id);
  if (!view) {
    view = new SessionView(id);
    state.views.set(id, view);
  }
  return view;
}

/** Show a session: its transcript (session/messages); a live one is also attached (session/new {sessionId}). */
async function openSession(id, { fresh = false } = {}) {
  const view = getView(id);
  state.current = view;
  hideConfirm();
  $("#chat-empty").hidden = true;
  $("#chat-pane").hidden = false;
  $("#view-sessions").classList.add("session-open");
  $("#transcript-host").replaceChildren(view.el);
  renderChatHead(view);
  renderSessionList();
  updateComposer();
  if (fresh) return;
  const entry = state.sessions.get(id);
  if (entry?.live && !view.attached) {
    // Attach as a watcher: turns this principal runs from other clients stream here too (R-STREAM).
    const opened = await tryCall("Attach to session", "session/new", { sessionId: id });
    if (opened) view.attached = true;
  }
  if (!view.running) await view.load();
  view.scrollToEnd();
}

function renderChatHead(view) {
  if (state.current !== view) return;
  const entry = state.sessions.get(view.id);
  const st = entry ? sessionState(entry) : view.info?.killed ? "killed" : "live";
  $("#chat-title").textContent = view.id;
  $("#chat-meta").replaceChildren(
    h("span", { class: `badge ${st}`, id: "chat-state", text: st }),
    ` agent ${entry?.agentAlias ?? view.info?.agentAlias ?? "?"} · ${entry?.mode ?? view.info?.mode ?? "?"}`,
    entry ? ` · ${entry.messageCount ?? 0} messages · last activity ${formatTime(entry.lastActivity ?? entry.createdAt)}` : "",
  );
  $("#close-session").disabled = st !== "live";
  $("#kill-session").disabled = st === "killed";
  updateComposer();
}

function isKilled(view) {
  const entry = state.sessions.get(view.id);
  return entry ? Boolean(entry.killed) : Boolean(view.info?.killed);
}

function updateComposer() {
  const view = state.current;
  if (!view) return;
  const connected = Boolean(state.rpc) && $("#conn-banner").hidden;
  const killed = isKilled(view);
  $("#send").disabled = !connected || killed || view.running;
  $("#prompt").disabled = !connected || killed;
  $("#cancel").disabled = !connected || !view.running;
  $("#reload-session").disabled = view.running;
  const note = $("#composer-note");
  if (killed) showInline(note, "This session was killed: its history is read-only and it can never be resumed.", "note");
  else if (view.running) showInline(note, "The agent is working… Cancel stops the turn.", "note");
  else showInline(note, "", "note");
}

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

let pendingAction = null;

function askConfirm(action) {
  const view = state.current;
  if (!view) return;
  pendingAction = { action, view };
  $("#confirm-text").textContent = ACTIONS[action].text(view.id);
  $("#confirm-yes").textContent = ACTIONS[action].label;
  $("#confirm-yes").dataset.action = action;
  $("#confirm-bar").hidden = false;
  $("#confirm-yes").focus();
}

function hideConfirm() {
  pendingAction = null;
  $("#confirm-bar").hidden = true;
}

async function confirmAction() {
  if (!pendingAction) return;
  const { action, view } = pendingAction;
  hideConfirm();
  const result = await tryCall(ACTIONS[action].label, `session/${action}`, { sessionId: view.id });
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
    state.views.delete(view.id);
    view.closePending("The session was deleted.");
    if (state.current === view) {
      state.current = null;
      $("#chat-pane").hidden = true;
      $("#chat-empty").hidden = false;
      $("#view-sessions").classList.remove("session-open");
    }
  }
  await refreshSessions();
  refreshStatus();
}

// ------------------------------------------------------------------------------------------------ a session's chat

/** The transcript and the live turns of one session. It keeps rendering while another session is shown. */
class SessionView {
  constructor(id) {
    this.id = id;
    this.el = h("div", { class: "transcript", dataset: { sessionId: id } });
    this.turn = null;
    this.running = false;
    this.attached = false;
    this.loaded = false;
    this.info = null;
    this.firstIndex = null;
    this.total = 0;
    this.cards = new Map(); // toolCallId → tool card, for results that arrive later
  }

  get isShown() {
    return state.current === this;
  }

  scrollToEnd() {
    const host = $("#transcript-host");
    if (this.isShown) host.scrollTop = host.scrollHeight;
  }

  /** Append a node; keep the view pinned to the bottom if it was there. */
  add(node, parent = this.el) {
    const host = $("#transcript-host");
    const pinned = host.scrollHeight - host.scrollTop - host.clientHeight < 80;
    parent.append(node);
    if (pinned) this.scrollToEnd();
    return node;
  }

  async load() {
    const result = await tryCall("Read transcript", "session/messages", { sessionId: this.id, limit: HISTORY_PAGE });
    if (!result || this.running) return;
    this.renderHistory(result.messages || [], result.total ?? 0);
    this.loaded = true;
  }

  async loadEarlier(button) {
    button.disabled = true;
    const result = await tryCall("Read earlier messages", "session/messages", {
      sessionId: this.id,
      limit: HISTORY_PAGE,
      before: this.firstIndex,
    });
    button.disabled = false;
    if (!result) return;
    const rows = result.messages || [];
    const fragment = h("div", { class: "history-page" });
    for (const row of rows) fragment.append(this.historyRow(row));
    button.parentElement.remove();
    this.firstIndex = rows.length ? rows[0].index : 0;
    this.el.prepend(this.earlierButton(), fragment);
  }

  earlierButton() {
    if (!this.firstIndex) return "";
    return h(
      "div",
      { class: "earlier" },
      h("button", { type: "button", class: "ghost small", text: `Load earlier messages (${this.firstIndex} more)`, on: { click: (e) => this.loadEarlier(e.currentTarget) } }),
    );
  }

  renderHistory(rows, total) {
    this.cards.clear();
    this.total = total;
    this.firstIndex = rows.length ? rows[0].index : 0;
    const nodes = rows.map((row) => this.historyRow(row));
    this.el.replaceChildren(this.earlierButton(), ...nodes);
    if (!rows.length) this.el.append(h("p", { class: "muted empty-transcript", text: "No messages yet. Say something." }));
  }

  /** One row of session/messages as a node. */
  historyRow(row) {
    if (row.marker) {
      return h(
        "div",
        { class: "marker", dataset: { marker: row.marker } },
        h("span", { class: "marker-label", text: row.marker === "interrupted" ? "Interrupted" : row.marker }),
        h("span", { text: row.content || "Turn interrupted." }),
      );
    }
    switch (row.role) {
      case "user":
        return bubble("user", row.content);
      case "assistant":
        return bubble("assistant", row.content);
      case "tool_call": {
        let input = row.content;
        try {
          input = JSON.parse(row.content);
        } catch {
          /* shown as text */
        }
        const card = toolCard(row.name ?? "tool", row.toolCallId, input);
        if (row.toolCallId) this.cards.set(row.toolCallId, card);
        return card.el;
      }
      case "tool_result": {
        const card = this.cards.get(row.toolCallId);
        if (card) {
          card.setOutput(row.content);
          return "";
        }
        const orphan = toolCard(row.name ?? "tool", row.toolCallId, undefined);
        orphan.setOutput(row.content);
        return orphan.el;
      }
      default:
        return h("div", { class: "bubble other" }, h("div", { class: "who", text: row.role ?? "?" }), h("div", { class: "text", text: row.content ?? "" }));
    }
  }

  note(text, cls = "note") {
    return this.add(h("div", { class: cls, text }));
  }

  /** A turn this page started: the user's bubble, then streamed updates. */
  startTurn(prompt) {
    $(".empty-transcript", this.el)?.remove();
    this.add(bubble("user", prompt));
    return this.beginTurn();
  }

  beginTurn(external = false) {
    this.turn = { text: null, thought: null, tools: [], completed: false, sawText: false };
    this.running = true;
    if (external) this.note("A turn started from another client of yours:");
    if (this.isShown) updateComposer();
    return this.turn;
  }

  onUpdate(params) {
    const type = params.type;
    if (type === "history_trimmed") {
      this.note(`Context trimmed: ${params.droppedMessages ?? "?"} older messages are no longer sent to the model (kept ${params.keptMessages ?? "?"}); the transcript is unchanged.`);
      return;
    }
    const turn = this.turn ?? this.beginTurn(true);
    switch (type) {
      case "agent_message_chunk": {
        turn.thought = null;
        if (!turn.text) turn.text = this.add(bubble("assistant", "", true));
        append($(".text", turn.text), [params.text ?? ""]);
        turn.sawText = true;
        this.scrollIfPinned();
        break;
      }
      case "agent_thought_chunk": {
        turn.text = null;
        if (!turn.thought) {
          const body = h("div", { class: "thought-text" });
          const details = h("details", { class: "thought" }, h("summary", { text: "Thought" }), body);
          turn.thought = { details, body };
          this.add(details);
        }
        append(turn.thought.body, [params.text ?? ""]);
        break;
      }
      case "tool_call": {
        turn.text = null;
        turn.thought = null;
        const card = toolCard(params.name ?? "tool", params.toolCallId, params.rawInput);
        card.running();
        turn.tools.push(card);
        if (params.toolCallId) this.cards.set(params.toolCallId, card);
        this.add(card.el);
        break;
      }
      case "approval_request": {
        const card = [...turn.tools].reverse().find((c) => !c.done && c.name === params.toolName) ?? null;
        const box = approvalBox(this, params);
        if (card) card.attach(box.el, box);
        else this.add(box.el);
        this.scrollToEnd();
        break;
      }
      case "tool_result": {
        let card = this.cards.get(params.toolCallId);
        if (!card) {
          card = toolCard(params.name ?? "tool", params.toolCallId, undefined);
          this.add(card.el);
        }
        card.setOutput(params.rawOutput);
        turn.text = null;
        this.scrollIfPinned();
        break;
      }
      case "turn_complete":
        this.finishTurn(turn, params.stopReason, params.content);
        break;
      default:
        this.note(`Update of an unknown type: ${String(type)}`);
    }
  }

  scrollIfPinned() {
    const host = $("#transcript-host");
    if (host.scrollHeight - host.scrollTop - host.clientHeight < 160) this.scrollToEnd();
  }

  /** turn_complete or the session/prompt result, whichever comes first; the second is ignored. */
  finishTurn(turn, stopReason, content) {
    if (!turn || turn.completed) return;
    turn.completed = true;
    if (!turn.sawText && content) this.add(bubble("assistant", content));
    for (const card of turn.tools) card.settle();
    if (stopReason && stopReason !== "end_turn") {
      const words = {
        cancelled: "Turn cancelled.",
        failed: "Turn failed.",
        max_turns: "Turn stopped: the agent reached its step limit (max_turn_steps).",
      };
      this.add(h("div", { class: `stop stop-${stopReason}`, dataset: { stopReason }, text: words[stopReason] ?? `Turn ended: ${stopReason}` }));
    }
    if (this.turn === turn) {
      this.turn = null;
      this.running = false;
    }
    if (this.isShown) updateComposer();
  }

  failTurn(turn, err) {
    this.add(h("div", { class: "stop stop-error", text: describeError(err) }));
    if (turn && !turn.completed) {
      turn.completed = true;
      for (const card of turn.tools) card.settle();
    }
    if (this.turn === turn) {
      this.turn = null;
      this.running = false;
    }
    if (this.isShown) updateComposer();
  }

  /** elicitation/create: a form in the card of the tool that asks (ask_user, poll). Resolves with the answer. */
  elicit(params) {
    return new Promise((resolve) => {
      const form = elicitationForm(params, resolve);
      const turn = this.turn ?? this.beginTurn(true);
      const card = [...turn.tools].reverse().find((c) => !c.done);
      if (card) card.attach(form.el, form);
      else this.add(form.el);
      this.scrollToEnd();
      form.el.querySelector("input, select, textarea")?.focus({ preventScroll: true });
    });
  }

  /** The connection went away, or the session did: nothing pending here can be answered any more. */
  closePending(reason) {
    for (const item of state.pendingElicitations) if (item.sessionId === this.id) item.expire(reason);
    if (this.turn) this.failTurn(this.turn, new ConnectionError(reason));
  }
}

function bubble(role, text, streaming = false) {
  return h(
    "div",
    { class: `bubble ${role}${streaming ? " streaming" : ""}`, dataset: { role } },
    h("div", { class: "who", text: role === "user" ? "You" : "Agent" }),
    h("div", { class: "text", text: text ?? "" }),
  );
}

/** A tool call: name, input, then output; interactive parts (approval, question) go inside it. */
function toolCard(name, toolCallId, input) {
  const status = h("span", { class: "badge tool-status", text: "called" });
  const output = h("pre", { class: "tool-output", hidden: true });
  const extras = h("div", { class: "tool-extras" });
  const el = h(
    "details",
    { class: "tool", open: true, dataset: { toolCallId: toolCallId ?? "", tool: name } },
    h("summary", {}, h("span", { class: "tool-name mono", text: name }), " ", status, toolCallId ? h("span", { class: "muted small mono", text: ` ${toolCallId}` }) : ""),
    input === undefined ? "" : [h("div", { class: "label", text: "Input" }), h("pre", { class: "tool-input", text: pretty(input) })],
    extras,
    h("div", { class: "label output-label", text: "Output", hidden: true }),
    output,
  );
  const card = {
    el,
    name,
    done: false,
    interactions: [],
    running() {
      status.textContent = "running";
      status.className = "badge tool-status running";
    },
    attach(node, interaction) {
      extras.append(node);
      if (interaction) this.interactions.push(interaction);
    },
    setOutput(text) {
      this.done = true;
      status.textContent = "done";
      status.className = "badge tool-status done";
      output.textContent = pretty(text ?? "");
      output.hidden = false;
      $(".output-label", el).hidden = false;
      for (const item of this.interactions) item.expire?.("The tool finished before this was answered.");
    },
    settle() {
      if (!this.done) {
        status.textContent = "no result";
        status.className = "badge tool-status";
        for (const item of this.interactions) item.expire?.("The turn ended before this was answered.");
      }
    },
  };
  return card;
}

// ------------------------------------------------------------------------------------------------ approvals

const DECISIONS = [
  ["allow_once", "Allow once", "primary"],
  ["allow_always", "Allow always", ""],
  ["reject", "Reject", "danger"],
];

function approvalBox(view, params) {
  const result = h("p", { class: "approval-result", role: "status", hidden: true });
  const buttons = DECISIONS.map(([decision, label, cls]) =>
    h("button", { type: "button", class: `small ${cls}`, dataset: { decision }, text: label, on: { click: () => decide(decision, label) } }),
  );
  const el = h(
    "div",
    { class: "approval", dataset: { requestId: params.requestId ?? "" } },
    h("p", { class: "approval-title" }, "Approve ", h("strong", { class: "mono", text: params.toolName ?? "tool" }), " with these arguments?"),
    h("pre", { text: pretty(params.arguments ?? {}) }),
    h("p", { class: "muted small", text: `Rejected automatically after ${params.timeoutSecs ?? "?"} s without an answer.` }),
    h("div", { class: "buttons" }, buttons),
    result,
  );
  const box = {
    el,
    answered: false,
    expire(reason) {
      if (box.answered) return;
      box.answered = true;
      for (const b of buttons) b.disabled = true;
      showInline(result, `No longer pending: ${reason}`, "note");
    },
  };
  async function decide(decision, label) {
    if (box.answered) return;
    for (const b of buttons) b.disabled = true;
    try {
      await state.rpc.call("session/approve", { sessionId: view.id, requestId: params.requestId, decision });
      box.answered = true;
      el.classList.add("answered");
      for (const b of buttons) if (b.dataset.decision === decision) b.setAttribute("aria-pressed", "true");
      showInline(result, `Decision sent: ${label.toLowerCase()}.`, "ok");
    } catch (err) {
      reportError("Approve", err);
      showInline(result, describeError(err));
      const gone = err instanceof RpcError && (err.code === -32602 || err.code === -32000);
      if (gone) box.answered = true;
      else for (const b of buttons) b.disabled = false;
    }
  }
  return box;
}

// ------------------------------------------------------------------------------------------------ elicitation

/**
 * A form from `requestedSchema` (a JSON-Schema object): string → text input, enum → radio buttons (up to 6) or a
 * select, boolean → checkbox, number / integer → number input. Accept sends {action:"accept", content}.
 */
function elicitationForm(params, resolve) {
  const schema = params.requestedSchema && typeof params.requestedSchema === "object" ? params.requestedSchema : {};
  const properties = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const readers = [];
  const fields = Object.entries(properties).map(([key, prop]) => {
    const p = prop && typeof prop === "object" ? prop : {};
    const title = typeof p.title === "string" && p.title ? p.title : key;
    const must = required.has(key);
    const hint = typeof p.description === "string" ? h("p", { class: "muted small", text: p.description }) : "";
    if (Array.isArray(p.enum)) {
      const options = p.enum.map((v) => String(v));
      if (options.length <= 6) {
        const name = uid("choice");
        const radios = options.map((option, i) =>
          h("label", { class: "choice" }, h("input", { type: "radio", name, value: String(i), required: must }), h("span", { text: option })),
        );
        readers.push(() => {
          const picked = radios.map((r) => $("input", r)).find((input) => input.checked);
          return picked ? [key, p.enum[Number(picked.value)]] : null;
        });
        return h("fieldset", { class: "field" }, h("legend", { text: title }), hint, h("div", { class: "choices" }, radios));
      }
      const id = uid("select");
      const select = h(
        "select",
        { id, required: must },
        h("option", { value: "", text: "Choose…" }),
        options.map((option, i) => h("option", { value: String(i), text: option })),
      );
      readers.push(() => (select.value === "" ? null : [key, p.enum[Number(select.value)]]));
      return h("div", { class: "field" }, h("label", { for: id, text: title }), hint, select);
    }
    const id = uid("answer");
    if (p.type === "boolean") {
      const box = h("input", { id, type: "checkbox" });
      readers.push(() => [key, box.checked]);
      return h("div", { class: "field checkbox" }, box, h("label", { for: id, text: title }), hint);
    }
    const numeric = p.type === "number" || p.type === "integer";
    const input = h("input", {
      id,
      type: numeric ? "number" : "text",
      step: p.type === "integer" ? "1" : numeric ? "any" : null,
      required: must,
      minlength: Number.isInteger(p.minLength) ? p.minLength : null,
      maxlength: Number.isInteger(p.maxLength) ? p.maxLength : null,
      autocomplete: "off",
    });
    readers.push(() => {
      if (input.value === "" && !must) return null;
      return [key, numeric ? Number(input.value) : input.value];
    });
    return h("div", { class: "field" }, h("label", { for: id, text: title }), hint, input);
  });

  const result = h("p", { class: "elicit-result", role: "status", hidden: true });
  const submit = h("button", { type: "submit", class: "primary small", text: "Answer" });
  const decline = h("button", { type: "button", class: "small", text: "Decline", on: { click: () => finish({ action: "decline" }, "You declined to answer.") } });
  const cancel = h("button", { type: "button", class: "small ghost", text: "Cancel", on: { click: () => finish({ action: "cancel" }, "You cancelled the question.") } });
  const el = h(
    "form",
    { class: "elicit", novalidate: null },
    h("p", { class: "elicit-message" }, h("span", { class: "badge ask", text: "Question" }), " ", h("span", { text: params.message ?? "The agent asks:" })),
    fields.length ? fields : h("p", { class: "muted small", text: "No fields requested: Answer accepts, Decline refuses." }),
    h("div", { class: "buttons" }, submit, decline, cancel),
    result,
  );
  const item = {
    el,
    sessionId: params.sessionId,
    expire(reason) {
      if (done) return;
      done = true;
      state.pendingElicitations.delete(item);
      lock();
      showInline(result, `No longer waiting for an answer: ${reason}`, "note");
    },
  };
  let done = false;
  state.pendingElicitations.add(item);
  function lock() {
    for (const control of el.querySelectorAll("input, select, textarea, button")) control.disabled = true;
  }
  function finish(answer, text) {
    if (done) return;
    done = true;
    state.pendingElicitations.delete(item);
    lock();
    el.classList.add("answered");
    showInline(result, text, "ok");
    resolve(answer);
  }
  el.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!el.reportValidity()) return;
    const content = Object.fromEntries(readers.map((read) => read()).filter(Boolean));
    const shown = Object.entries(content)
      .map(([k, v]) => `${k} = ${typeof v === "string" ? v : JSON.stringify(v)}`)
      .join(", ");
    finish({ action: "accept", content }, `You answered: ${shown || "(nothing)"}.`);
  });
  return item;
}

// ------------------------------------------------------------------------------------------------ daemon → panel

function onNotification(method, params) {
  if (method !== "session/update" || !params || typeof params.sessionId !== "string") return;
  const view = state.views.get(params.sessionId);
  if (!view) return; // a session this page has not opened
  try {
    view.onUpdate(params);
  } catch (err) {
    reportError("Showing an update", err);
  }
  if (params.type === "approval_request") bringForward(view);
  if (params.type === "turn_complete") refreshSessions();
}

async function onRequest(method, params) {
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
  if (state.current === view && !$("#view-sessions").hidden) return;
  selectTab("sessions");
  if (state.current !== view) openSession(view.id);
  else $("#view-sessions").classList.add("session-open");
}

// ------------------------------------------------------------------------------------------------ chat actions

async function sendPrompt(event) {
  event.preventDefault();
  const view = state.current;
  const input = $("#prompt");
  const text = input.value;
  if (!view || !text.trim() || view.running) return;
  input.value = "";
  const turn = view.startTurn(text);
  updateComposer();
  try {
    const result = await state.rpc.call("session/prompt", { sessionId: view.id, prompt: text });
    view.finishTurn(turn, result?.stopReason, result?.content);
  } catch (err) {
    reportError("Send message", err);
    view.failTurn(turn, err);
  } finally {
    updateComposer();
    refreshSessions();
  }
}

async function cancelTurn() {
  const view = state.current;
  if (!view) return;
  $("#cancel").disabled = true;
  const result = await tryCall("Cancel turn", "session/cancel", { sessionId: view.id });
  if (!result) updateComposer();
}

// ------------------------------------------------------------------------------------------------ config

/** Flatten the config into dotted property paths (maps and tables become paths; lists stay values). */
function flatten(value, prefix = "", out = []) {
  if (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length) {
    for (const [key, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${key}` : key, out);
  } else if (prefix) {
    out.push([prefix, value]);
  }
  return out;
}

async function loadConfig() {
  const errorEl = $("#config-error");
  if (!state.rpc) return;
  try {
    const config = await state.rpc.call("config/get", {});
    state.config = config;
    showInline(errorEl, "");
    renderConfig();
    const agents = config && typeof config.agents === "object" && config.agents ? Object.keys(config.agents) : [];
    setAgents(agents.length ? agents : ["default"]);
  } catch (err) {
    showInline(errorEl, `Cannot read the config. ${describeError(err)}`);
    reportError("Read config (the agent list falls back to \u201cdefault\u201d)", err);
    setAgents(["default"]);
  }
}

function setAgents(agents) {
  const select = $("#new-agent");
  const chosen = select.value;
  state.agents = agents;
  select.replaceChildren(...agents.map((a) => h("option", { value: a, text: a, selected: a === chosen })));
}

function renderConfig() {
  const filter = $("#config-filter").value.trim().toLowerCase();
  const rows = flatten(state.config ?? {}).filter(([prop]) => !filter || prop.toLowerCase().includes(filter));
  $("#config-table tbody").replaceChildren(
    ...rows.map(([prop, value]) =>
      h(
        "tr",
        { dataset: { prop } },
        h("td", { class: "mono prop", text: prop }),
        h("td", { class: "mono value", text: JSON.stringify(value) ?? "" }),
        h("td", {}, h("button", { type: "button", class: "ghost small", text: "Edit", on: { click: () => editProp(prop, value) } })),
      ),
    ),
  );
}

function editProp(prop, value) {
  $("#cfg-prop").value = prop;
  $("#cfg-value").value = JSON.stringify(value) ?? "";
  $("#cfg-value").focus();
  $("#config-set").scrollIntoView({ block: "nearest" });
}

/** A value typed by the user: JSON when it parses, else the text itself as a string. */
function parseValue(text) {
  const trimmed = text.trim();
  if (trimmed === "") return "";
  try {
    return JSON.parse(trimmed);
  } catch {
    return text;
  }
}

async function setOne(event) {
  event.preventDefault();
  const out = $("#cfg-set-result");
  const prop = $("#cfg-prop").value.trim();
  if (!prop) {
    showInline(out, "Enter a property path, for example agents.default.model.");
    return;
  }
  const value = parseValue($("#cfg-value").value);
  try {
    const result = await state.rpc.call("config/set", { prop, value });
    showInline(out, `Set ${result.prop} = ${JSON.stringify(value)}.`, "ok");
    await loadConfig();
  } catch (err) {
    showInline(out, `Not set. ${describeError(err)}`);
  }
}

async function deleteOne() {
  const out = $("#cfg-set-result");
  const prop = $("#cfg-prop").value.trim();
  if (!prop) {
    showInline(out, "Enter the property path to reset.");
    return;
  }
  try {
    const result = await state.rpc.call("config/delete", { prop });
    showInline(out, `Reset ${result.prop} to its default.`, "ok");
    await loadConfig();
  } catch (err) {
    showInline(out, `Not reset. ${describeError(err)}`);
  }
}

function addBatchRow(prop = "", value = "") {
  const body = $("#batch-rows");
  const propInput = h("input", { class: "batch-prop", placeholder: "limits.max_sessions", spellcheck: "false", value: prop, "aria-label": "Property" });
  const valueInput = h("input", { class: "batch-value", placeholder: "JSON value", spellcheck: "false", value, "aria-label": "Value" });
  const row = h(
    "tr",
    { class: "batch-row" },
    h("td", { class: "batch-index muted mono" }),
    h("td", {}, propInput),
    h("td", {}, valueInput),
    h("td", {}, h("button", { type: "button", class: "ghost small", "aria-label": "Remove row", text: "×", on: { click: () => { row.remove(); numberBatchRows(); } } })),
  );
  body.append(row);
  numberBatchRows();
  return row;
}

function numberBatchRows() {
  $$("#batch-rows tr").forEach((row, i) => {
    $(".batch-index", row).textContent = String(i);
    row.dataset.index = String(i);
  });
}

async function applyBatch(event) {
  event.preventDefault();
  const out = $("#batch-result");
  const rows = $$("#batch-rows tr");
  for (const row of rows) {
    row.classList.remove("row-error");
    row.removeAttribute("aria-invalid");
  }
  const sets = rows.map((row) => ({ prop: $(".batch-prop", row).value.trim(), value: parseValue($(".batch-value", row).value) }));
  if (!sets.length) {
    showInline(out, "Add at least one row.");
    return;
  }
  try {
    const result = await state.rpc.call("config/set-many", { sets });
    showInline(out, `Saved ${(result.props || []).length} propert${(result.props || []).length === 1 ? "y" : "ies"}: ${(result.props || []).join(", ")}.`, "ok");
    await loadConfig();
  } catch (err) {
    const index = err instanceof RpcError && Number.isInteger(err.data?.index) ? err.data.index : null;
    if (index !== null && rows[index]) {
      rows[index].classList.add("row-error");
      rows[index].setAttribute("aria-invalid", "true");
      $(".batch-prop", rows[index]).focus();
    }
    const where = index !== null ? ` Row #${index} is marked; nothing was saved.` : " Nothing was saved.";
    showInline(out, `${describeError(err)}.${where}`);
  }
}

// ------------------------------------------------------------------------------------------------ wiring

function selectTab(name) {
  for (const tab of $$(".tabs [role=tab]")) {
    const on = tab.dataset.view === name;
    tab.setAttribute("aria-selected", on ? "true" : "false");
    $(`#view-${tab.dataset.view}`).hidden = !on;
  }
  if (name === "config" && state.rpc) loadConfig();
  if (name === "status" && state.rpc) refreshStatus();
}

function wire() {
  $("#signin-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("#token").value.trim();
    if (!token) {
      showInline($("#signin-error"), "Enter a token (it starts with zc_).");
      return;
    }
    signIn(token);
  });
  $("#signout").addEventListener("click", signOut);
  $("#reconnect").addEventListener("click", reconnect);
  for (const tab of $$(".tabs [role=tab]")) tab.addEventListener("click", () => selectTab(tab.dataset.view));

  $("#new-session").addEventListener("submit", newSession);
  $("#refresh-sessions").addEventListener("click", refreshSessions);
  $("#back").addEventListener("click", () => $("#view-sessions").classList.remove("session-open"));
  $("#reload-session").addEventListener("click", () => state.current && !state.current.running && state.current.load());
  for (const id of ["#close-session", "#kill-session", "#delete-session"]) {
    $(id).addEventListener("click", (event) => askConfirm(event.currentTarget.dataset.action));
  }
  $("#confirm-yes").addEventListener("click", confirmAction);
  $("#confirm-no").addEventListener("click", hideConfirm);

  $("#composer").addEventListener("submit", sendPrompt);
  $("#prompt").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("#composer").requestSubmit();
    }
  });
  $("#cancel").addEventListener("click", cancelTurn);

  $("#reload-config").addEventListener("click", loadConfig);
  $("#config-filter").addEventListener("input", renderConfig);
  $("#config-set").addEventListener("submit", setOne);
  $("#cfg-delete").addEventListener("click", deleteOne);
  $("#batch-add").addEventListener("click", () => addBatchRow());
  $("#config-batch").addEventListener("submit", applyBatch);
  $("#refresh-status").addEventListener("click", refreshStatus);

  addBatchRow();
  addBatchRow();

  window.addEventListener("unhandledrejection", (event) => reportError("Unexpected failure", event.reason));
  window.addEventListener("error", (event) => reportError("Unexpected failure", event.error ?? new Error(event.message)));
}

wire();
const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) signIn(saved);
else showSignIn();
