// One session's transcript and its live turns (SessionView): history rows from `session/messages`, then the
// streamed `session/update`s (text, thoughts, tool cards, approvals, questions, the stop reason). A view keeps
// rendering while another session is shown; the chat view decides which one is on screen (show / hide).

import { $, append, h } from "./dom.js";
import { toolCard } from "./toolcard.js";
import { approvalBox, elicitationForm, expireQuestions } from "./approvals.js";
import { promptBubble, rolledBackText, steerRows } from "./branching.js";
import { tryCall } from "./connection.js";
import { applySettings } from "./models.js";
import { usageLine } from "./usage.js";
import { ConnectionError, describeError } from "./rpc.js";

const HISTORY_PAGE = 200;

/** The transcript and the live turns of one session. It keeps rendering while another session is shown. */
export class SessionView {
  /** `changed()` is called when the view on screen starts or ends a turn (the composer follows it). */
  constructor(id, { changed = () => {}, configured = () => {} } = {}) {
    this.id = id;
    this.changed = changed;
    this.configured = configured; // called with this view when its settings changed (config_changed)
    this.settings = null; // {agentAlias, model, temperature} of the last config_changed, R-MODEL-4
    this.host = null; // the scrolling element this view is shown in, while it is on screen
    this.el = h("div", { class: "transcript", dataset: { sessionId: id } });
    this.turn = null;
    this.running = false;
    this.attached = false;
    this.loaded = false;
    this.info = null;
    this.firstIndex = null;
    this.total = 0;
    this.steers = new Set(); // indexes of the user rows shown that were steers (R-BRANCH-3), not prompts
    this.cards = new Map(); // toolCallId → tool card, for results that arrive later
    this.approvals = new Map(); // requestId → approval box, for approval_resolved (answered in another tab)
    // R-MULTI: the last `seq` shown (null: none yet), and the updates held back while the transcript is redrawn.
    this.seq = null;
    this.held = null;
    this.following = false; // followed (or running a turn) when the connection dropped: resumed on reconnect
  }

  get isShown() {
    return this.host !== null;
  }

  /** Put this view on screen, in `host`. */
  show(host) {
    this.host = host;
    host.replaceChildren(this.el);
  }

  /** Another view (or none) is on screen now. */
  hide() {
    this.host = null;
  }

  scrollToEnd() {
    if (this.host) this.host.scrollTop = this.host.scrollHeight;
  }

  /** Append a node; keep the view pinned to the bottom if it was there. */
  add(node, parent = this.el) {
    const host = this.host;
    const pinned = host !== null && host.scrollHeight - host.scrollTop - host.clientHeight < 80;
    parent.append(node);
    if (pinned) this.scrollToEnd();
    return node;
  }

  /**
   * Read the transcript. `cutTurns`: the last turns are shown from their updates instead (follow.js), so the history
   * stops before the prompt of the first of them, which starts it; true if it did.
   */
  async load({ cutTurns = 0 } = {}) {
    const params = { sessionId: this.id, limit: HISTORY_PAGE, turnEnds: true };
    const result = await tryCall("Read transcript", "session/messages", params);
    if (!result || this.running) return false;
    const rows = result.messages || [];
    this.steers = steerRows(rows, result.turnEnds); // user rows that joined a running turn: not where turns start
    const users = rows.flatMap((row, i) => (row.role === "user" && !this.steers.has(row.index) ? [i] : []));
    const at = cutTurns > 0 && users.length >= cutTurns ? users[users.length - cutTurns] : -1;
    this.renderHistory(at < 0 ? rows : rows.slice(0, at), result.total ?? 0);
    this.loaded = true;
    if (at >= 0) this.startTurn(rows[at].content);
    return at >= 0;
  }

  async loadEarlier(button) {
    button.disabled = true;
    const result = await tryCall("Read earlier messages", "session/messages", {
      sessionId: this.id,
      limit: HISTORY_PAGE,
      before: this.firstIndex,
      turnEnds: true,
    });
    button.disabled = false;
    if (!result) return;
    const rows = result.messages || [];
    for (const index of steerRows(rows, result.turnEnds)) this.steers.add(index);
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
    this.approvals.clear();
    this.total = total;
    this.firstIndex = rows.length ? rows[0].index : 0;
    const nodes = rows.map((row) => this.historyRow(row));
    this.el.replaceChildren(this.earlierButton(), ...nodes);
    if (!rows.length) this.el.append(h("p", { class: "muted empty-transcript", text: "No messages yet. Say something." }));
  }

  /** One row of session/messages as a node. */
  historyRow(row) {
    if (row.marker) {
      const undone = row.marker === "rolled_back"; // R-BRANCH-2: session/rollback's marker
      return h(
        "div",
        { class: "marker", dataset: { marker: row.marker } },
        h("span", { class: "marker-label", text: undone ? "Undone" : row.marker === "interrupted" ? "Interrupted" : row.marker }),
        h("span", { text: undone ? rolledBackText(row.content) : row.content || "Turn interrupted." }),
      );
    }
    switch (row.role) {
      case "user":
        if (!Number.isInteger(row.index)) return bubble("user", row.content);
        return promptBubble(bubble("user", row.content), this.id, row.index, { steer: this.steers.has(row.index) });
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

  /** `external`: a turn this page did not start; its note (`turn.note`) stands where its prompt goes. */
  beginTurn(external = false) {
    this.turn = { text: null, thought: null, tools: [], completed: false, sawText: false, note: null };
    this.running = true;
    if (external) this.turn.note = this.note(external === true ? "A turn started from another client of yours:" : external);
    if (this.isShown) this.changed();
    return this.turn;
  }

  /**
   * A `session/update` for this session, from whichever source (the page's own prompt, a followed session, a
   * replay after a reconnect): held while follow.js attaches, dropped if its seq was shown already. True if shown.
   */
  receive(params) {
    if (this.held) {
      this.held.push(params);
      return false;
    }
    const seq = params.seq;
    if (Number.isInteger(seq)) {
      if (this.seq !== null && seq <= this.seq) return false; // shown already (replayed after a reconnect)
      this.seq = seq;
    }
    this.onUpdate(params);
    return true;
  }

  /** An approval known only by id (session/attach `pendingApprovals`): its buttons, unless they are shown. */
  pendingApproval(requestId) {
    if (this.approvals.has(requestId)) return;
    const box = approvalBox(this.id, { requestId });
    this.approvals.set(requestId, box);
    this.add(box.el);
  }

  onUpdate(params) {
    const type = params.type;
    if (type === "config_changed") return applySettings(this, params);
    if (type === "history_trimmed") {
      this.note(`Context trimmed: ${params.droppedMessages ?? "?"} older messages are no longer sent to the model (kept ${params.keptMessages ?? "?"}); the transcript is unchanged.`);
      return;
    }
    if (type === "rolled_back") {
      // R-BRANCH-2 (undone here or in another tab or client): the transcript no longer shows those turns; read it again.
      if (!this.running) this.load();
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
        if (this.approvals.has(params.requestId)) break;
        const card = [...turn.tools].reverse().find((c) => !c.done && c.name === params.toolName) ?? null;
        const box = approvalBox(this.id, params);
        this.approvals.set(params.requestId, box);
        if (card) card.attach(box.el, box);
        else this.add(box.el);
        this.scrollToEnd();
        break;
      }
      case "approval_resolved":
        // Settled by this page, another tab or client, or the timeout: nobody here needs to answer it any more.
        this.approvals.get(params.requestId)?.resolved(params.decision);
        this.approvals.delete(params.requestId);
        break;
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
      case "user_message": {
        // R-BRANCH-3: a steer joined the turn (from this tab or another); the agent's next words follow it.
        turn.text = null;
        turn.thought = null;
        this.add(promptBubble(bubble("user", params.text ?? ""), this.id, params.index, { steer: true }));
        break;
      }
      case "tool_progress":
        this.cards.get(params.toolCallId)?.progress(params.progress, params.total, params.message);
        break;
      case "usage": // one provider step's tokens: the turn's sum comes with turn_complete (R-MODEL-5)
        break;
      case "turn_complete":
        this.finishTurn(turn, params.stopReason, params.content, params.usage);
        break;
      default:
        this.note(`Update of an unknown type: ${String(type)}`);
    }
  }

  scrollIfPinned() {
    const host = this.host;
    if (host && host.scrollHeight - host.scrollTop - host.clientHeight < 160) this.scrollToEnd();
  }

  /** turn_complete or the session/prompt result, whichever comes first; the second is ignored. */
  finishTurn(turn, stopReason, content, usage) {
    if (!turn || turn.completed) return;
    turn.completed = true;
    if (!turn.sawText && content) this.add(bubble("assistant", content));
    for (const card of turn.tools) card.settle();
    if (usage) this.add(usageLine(usage));
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
      // A cancelled turn withdraws its approvals without approval_resolved; those outside a card expire here.
      for (const box of this.approvals.values()) box.expire("The turn ended before this was answered.");
      this.approvals.clear();
    }
    if (this.isShown) this.changed();
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
    if (this.isShown) this.changed();
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
    expireQuestions(this.id, reason);
    if (this.turn) this.failTurn(this.turn, new ConnectionError(reason));
  }
}

export function bubble(role, text, streaming = false) {
  return h(
    "div",
    { class: `bubble ${role}${streaming ? " streaming" : ""}`, dataset: { role } },
    h("div", { class: "who", text: role === "user" ? "You" : "Agent" }),
    h("div", { class: "text", text: text ?? "" }),
  );
}

/** A tool call: name, input, then output; interactive parts (approval, question) go inside it. */
