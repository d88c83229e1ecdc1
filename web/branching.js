// Branching a session from the panel (R-BRANCH-5): "Branch from here" on each prompt (session/fork at its index,
// then the child opens), "Undo last turn" (session/rollback turns:1), the steer box while a turn runs
// (session/steer), and the parent of a fork in the chat head. The rolled_back and user_message updates reach every
// tab following the session; transcript.js draws them with the helpers here.

import { $$, byId, h } from "./dom.js";
import { call, tryCall } from "./connection.js";
import { reportError, showInline } from "./errors.js";

const el = {
  undo: byId("undo-turn"),
  parent: byId("chat-parent"),
  steer: byId("steer"),
  steerText: byId("steer-text"),
  steerSend: byId("steer-send"),
  steerNote: byId("steer-note"),
  prompt: byId("prompt"),
};

const PROMPTS_READ = 100; // rows read to number the prompts of turns shown live

// What the chat view lends: the view on screen, opening a session, re-reading the list, a session's list entry.
/** @type {{current: () => any, open: (id: string) => Promise<void>, refresh: () => Promise<void>, entry: (id: string) => any}} */
let chat = { current: () => null, open: async () => {}, refresh: async () => {}, entry: () => undefined };

/** A prompt's "Branch from here" button: a fork at the prompt row `index` (the child has the rows before it). */
export function branchButton(sessionId, index) {
  return h("button", {
    type: "button",
    class: "ghost small branch",
    text: "Branch from here",
    title: "A new session with everything before this message, to try it another way",
    dataset: { index: String(index) },
    on: { click: (event) => branchAt(sessionId, index, event.currentTarget) },
  });
}

/** The user's bubble of a prompt row with its branch button; a steer's (R-BRANCH-3) is marked instead: no fork there. */
export function promptBubble(bubble, sessionId, index, { steer = false } = {}) {
  bubble.dataset.index = String(index);
  if (steer) bubble.classList.add("steered");
  else bubble.append(branchButton(sessionId, index));
  return bubble;
}

/**
 * The indexes of the steers among `rows` (a session/messages page with `turnEnds`): user rows whose previous row
 * is in the same turn (neither a turn's last row nor a marker). Without any turn end in the page (a chat session
 * records none; a session's first turn still runs) none is known: each user row counts as a prompt.
 */
export function steerRows(rows, turnEnds) {
  const ends = new Set((turnEnds ?? []).map((end) => end.index));
  const steers = new Set();
  if (!ends.size) return steers;
  rows.forEach((row, i) => {
    const before = rows[i - 1];
    if (row.role === "user" && before && !before.marker && !ends.has(before.index)) steers.add(row.index);
  });
  return steers;
}

/** A `rolled_back` marker row's words: its content is `{"turns", "from_index"}`. */
export function rolledBackText(content) {
  try {
    const { turns, from_index: from } = JSON.parse(content);
    return `${turns} turn(s) undone from row ${from} on: the model no longer sees them (they stay stored).`;
  } catch {
    return content || "Turns undone.";
  }
}

async function branchAt(sessionId, index, button) {
  button.disabled = true;
  try {
    const forked = await call("session/fork", { sessionId, atIndex: index });
    const mode = chat.entry(sessionId)?.mode ?? "acp";
    // Opened live on this connection (a chat child can only be prompted once opened), then shown.
    await call("session/new", { sessionId: forked.sessionId, mode });
    await chat.refresh();
    await chat.open(forked.sessionId);
  } catch (err) {
    reportError("Branch from here", err);
  } finally {
    button.disabled = false;
  }
}

/**
 * Give the prompts of turns shown live (this tab's, or another client's) their branch buttons once the turn ended:
 * their indexes are in the transcript. Prompts are paired from the newest back.
 */
export async function numberPrompts(view) {
  const bare = $$(".bubble.user", view.el);
  if (!bare.some((b) => !b.dataset.index)) return;
  const params = { sessionId: view.id, limit: PROMPTS_READ, turnEnds: true };
  let page;
  try {
    page = await call("session/messages", params);
  } catch {
    return; // nobody asked for this read (the connection dropped, say): the next load of the transcript numbers them
  }
  const steers = steerRows(page.messages ?? [], page.turnEnds);
  const rows = (page.messages ?? []).filter((row) => row.role === "user");
  for (let i = 1; i <= Math.min(rows.length, bare.length); i++) {
    const bubble = bare[bare.length - i];
    const { index } = rows[rows.length - i];
    if (!bubble.dataset.index) promptBubble(bubble, view.id, index, { steer: steers.has(index) });
  }
}

async function undo() {
  const view = chat.current();
  if (!view || view.running) return;
  el.undo.disabled = true;
  const done = await tryCall("Undo last turn", "session/rollback", { sessionId: view.id, turns: 1 });
  // Tabs following the session redraw on `rolled_back`; a session that is not live sends none: read it here.
  if (done && !view.attached) await view.load();
  render(view);
}

async function steer(event) {
  event.preventDefault();
  const view = chat.current();
  const text = el.steerText.value;
  if (!view || !view.running || !text.trim()) return;
  el.steerText.value = "";
  el.steerSend.disabled = true;
  showInline(el.steerNote, "", "note");
  try {
    // Answered once the turn takes it (its next step); the user_message update shows it in every tab.
    const result = await call("session/steer", { sessionId: view.id, prompt: text });
    if (!result.accepted) {
      el.prompt.value = text;
      showInline(el.steerNote, "The turn ended before it took this; it is in the message box: send it as a prompt.", "note");
    }
  } catch (err) {
    el.steerText.value = text;
    reportError("Steer", err);
  } finally {
    el.steerSend.disabled = false;
  }
}

/** The head and the steer box for `view` (the one on screen): what a running turn and the session's state allow. */
export function render(view, { online = true, killed = false } = {}) {
  const running = Boolean(view?.running);
  el.undo.disabled = !view || !online || killed || running;
  el.steer.hidden = !view || !online || killed || !running;
  if (!running) showInline(el.steerNote, "", "note");
  const entry = view ? chat.entry(view.id) : undefined;
  const parentId = entry?.parentId ?? view?.info?.parentId;
  el.parent.hidden = !parentId;
  if (!parentId) return;
  const forkedAt = entry?.forkedAt ?? view.info?.forkedAt;
  el.parent.replaceChildren(
    "Branched from ",
    h("button", { type: "button", class: "link mono", id: "open-parent", text: parentId, on: { click: () => chat.open(parentId) } }),
    Number.isInteger(forkedAt) ? ` before its row ${forkedAt}` : "",
  );
}

/** `current()`: the view on screen; `open(id)`, `refresh()`: the chat view's; `entry(id)`: the session list's. */
export function initBranching(hooks) {
  chat = { ...chat, ...hooks };
  el.undo.addEventListener("click", undo);
  el.steer.addEventListener("submit", steer);
}
