// What a turn asks of the user, drawn inside the asking tool's card: approvals (`approval_request` →
// `session/approve`) and questions (`elicitation/create`, a form built from `requestedSchema`). An open question
// is remembered until it is answered or expired, so a lost connection or a deleted session can lock its form.

import { $, h, pretty, uid } from "./dom.js";
import { call } from "./connection.js";
import { reportError, showInline } from "./errors.js";
import { RpcError, describeError } from "./rpc.js";

const questions = new Set(); // the open question forms: {el, sessionId, expire(reason)}

/** Nothing can answer the open questions of this session any more: lock their forms with the reason. */
export function expireQuestions(sessionId, reason) {
  for (const item of questions) if (item.sessionId === sessionId) item.expire(reason);
}

// ------------------------------------------------------------------------------------------------ approvals

// [button key, label, class, session/approve params]. "For this agent" stores a rule for this call's exact
// command or path (R-GUARD-3); the Config tab lists and deletes those.
const DECISIONS = [
  ["allow_once", "Allow once", "primary", { decision: "allow_once" }],
  ["allow_always", "Always for this session", "", { decision: "allow_always" }],
  ["allow_agent", "Always for this agent", "", { decision: "allow_always", remember: "agent" }],
  ["reject", "Reject", "danger", { decision: "reject" }],
  ["reject_always", "Reject for this session", "danger", { decision: "reject_always" }],
];

const DECISION_WORDS = {
  allow_once: "allow once",
  allow_always: "allow always",
  reject: "reject",
  reject_always: "reject for this session",
  reject_with_edit: "reject (with an edit)",
};

/**
 * The buttons of an approval_request. `expire(reason)` locks them if the tool's result comes first;
 * `resolved(decision)` takes them away when another tab or client answered first (`approval_resolved`, R-MULTI-3).
 * A request known only by its id (`pendingApprovals` of session/attach: asked before this page followed the
 * session) has no tool name or arguments to show.
 */
export function approvalBox(sessionId, params) {
  const result = h("p", { class: "approval-result", role: "status", hidden: true });
  const buttons = DECISIONS.map(([key, label, cls, answer]) =>
    h("button", { type: "button", class: `small ${cls}`, dataset: { decision: key }, text: label, on: { click: () => decide(key, label, answer) } }),
  );
  const row = h("div", { class: "buttons" }, buttons);
  const known = params.arguments !== undefined;
  // While it waits: the deadline, as a time (reckoned from when this page got the request); gone once answered.
  const deadline = h("p", { class: "muted small approval-deadline", text: deadlineText(params.timeoutSecs) });
  const el = h(
    "div",
    { class: "approval", dataset: { requestId: params.requestId ?? "" } },
    known
      ? [
          h("p", { class: "approval-title" }, "Approve ", h("strong", { class: "mono", text: params.toolName ?? "tool" }), " with these arguments?"),
          h("pre", { text: pretty(params.arguments ?? {}) }),
          deadline,
        ]
      : h("p", { class: "approval-title" }, "A tool waits for approval ", h("span", { class: "mono", text: params.requestId ?? "" }), " (asked before this page followed the session)."),
    row,
    result,
  );
  let sending = false; // our own answer is on its way: its reply, not approval_resolved, says how it went
  const settle = (text, kind) => {
    box.answered = true;
    deadline.remove();
    row.remove(); // nothing left to click
    el.classList.add("answered");
    showInline(result, text, kind);
  };
  const box = {
    el,
    answered: false,
    expire(reason) {
      if (box.answered) return;
      box.answered = true;
      deadline.remove();
      for (const b of buttons) b.disabled = true;
      showInline(result, `No longer pending: ${reason}`, "note");
    },
    resolved(decision) {
      if (box.answered || sending) return;
      const timeout = decision === "reject" ? ", or it timed out" : "";
      settle(`Answered elsewhere: ${DECISION_WORDS[decision] ?? decision} (in another tab or client${timeout}).`, "note");
    },
  };
  async function decide(key, label, answer) {
    if (box.answered || sending) return;
    sending = true;
    for (const b of buttons) b.disabled = true;
    try {
      const reply = await call("session/approve", { sessionId, requestId: params.requestId, ...answer });
      if (reply?.acknowledged === false) {
        // Another tab or client (or the timeout) settled it first; this answer changed nothing.
        settle("Already answered elsewhere: this answer came too late.", "note");
        return;
      }
      box.answered = true;
      deadline.remove();
      el.classList.add("answered");
      for (const b of buttons) if (b.dataset.decision === key) b.setAttribute("aria-pressed", "true");
      showInline(result, `Decision sent: ${label.toLowerCase()}.`, "ok");
    } catch (err) {
      reportError("Approve", err);
      showInline(result, describeError(err));
      const gone = err instanceof RpcError && (err.code === -32602 || err.code === -32000);
      if (gone) {
        box.answered = true;
        deadline.remove();
      }
      else for (const b of buttons) b.disabled = false;
    } finally {
      sending = false;
    }
  }
  return box;
}

/** "Answer by 14:05:32, or it is rejected automatically (120 s after it was asked)." */
function deadlineText(timeoutSecs) {
  if (typeof timeoutSecs !== "number") return "Rejected automatically if nobody answers in time.";
  const at = new Date(Date.now() + timeoutSecs * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  return `Answer by ${at}, or it is rejected automatically (${timeoutSecs} s after it was asked).`;
}

// ------------------------------------------------------------------------------------------------ questions

/**
 * A form from `requestedSchema` (a JSON-Schema object): string → text input, enum → radio buttons (up to 6) or a
 * select, boolean → checkbox, number / integer → number input. Accept sends {action:"accept", content}.
 */
export function elicitationForm(params, resolve) {
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
      questions.delete(item);
      lock();
      showInline(result, `No longer waiting for an answer: ${reason}`, "note");
    },
  };
  let done = false;
  questions.add(item);
  function lock() {
    for (const control of el.querySelectorAll("input, select, textarea, button")) control.disabled = true;
  }
  function finish(answer, text) {
    if (done) return;
    done = true;
    questions.delete(item);
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

