// The error list (bottom right, role=alert) and the inline messages next to forms. Every failure is shown in
// words (rpc.js describeError: code, kind, message, context such as data.index), never swallowed.

import { byId, h } from "./dom.js";
import { describeError } from "./rpc.js";

const list = byId("errors");
let last = { text: "", at: 0 };

/** Show an error in the error list. `context` says what was being done. */
export function reportError(context, err) {
  const text = `${context}: ${describeError(err)}`;
  const now = Date.now();
  if (text === last.text && now - last.at < 5000) return; // the same failure of a periodic refresh
  last = { text, at: now };
  const item = h(
    "li",
    { class: "error-item" },
    h("span", { class: "error-message", text }),
    h("button", { type: "button", class: "ghost small", "aria-label": "Dismiss", text: "×", on: { click: () => item.remove() } }),
  );
  list.append(item);
  while (list.children.length > 6) list.firstElementChild.remove();
}

export function clearErrors() {
  list.replaceChildren();
}

/** A message in `el` (hidden when empty): kind "error", "ok" or "note". */
export function showInline(el, text, kind = "error") {
  el.textContent = text;
  el.classList.toggle("error-text", kind === "error");
  el.classList.toggle("ok-text", kind === "ok");
  el.hidden = !text;
}
