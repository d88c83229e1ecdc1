// Small DOM helpers. Every string goes in as text (textContent / text nodes / setAttribute), never as HTML:
// the panel never uses innerHTML, so nothing the daemon sends can become markup. Event handlers are attached
// with addEventListener (the page's CSP forbids inline handlers).

const PROPERTIES = new Set(["value", "checked", "disabled", "required", "hidden", "open", "selected", "readOnly"]);

/**
 * h("button", {class: "x", type: "button", on: {click: fn}}, "Label", child, [more, children])
 * Props: `class`, `text` (textContent), `dataset`, `on` (event listeners), DOM properties in PROPERTIES,
 * anything else becomes an attribute (null / undefined / false are skipped).
 * @returns {any} the element (any: its tag decides its type)
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = String(value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "on") for (const [event, fn] of Object.entries(value)) el.addEventListener(event, fn);
    else if (PROPERTIES.has(key)) el[key] = value;
    else if (/^on/i.test(key)) throw new Error(`inline handler ${key} refused`);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Append children: nodes, strings (as text), numbers, arrays; null / undefined / false are skipped. */
export function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** @type {(selector: string, root?: ParentNode) => any} */
export const $ = (selector, root = document) => root.querySelector(selector);
/**
 * The page's element with this id; a missing one is a bug in index.html, so it fails at start-up, loudly.
 * @returns {any} the element (any: index.html decides its type)
 */
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`index.html has no #${id}`);
  return el;
}
/** @type {(selector: string, root?: ParentNode) => any[]} */
export const $$ = (selector, root = document) => Array.from(root.querySelectorAll(selector));

/** Pretty JSON for display (as text); strings are shown as they are. */
export function pretty(value) {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** "2026-01-02T03:04:05Z" → a local date and time; anything unparsable is shown as it came. */
export function formatTime(iso) {
  if (!iso) return "never";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const seconds = Math.round((Date.now() - date.getTime()) / 1000);
  if (seconds >= 0 && seconds < 60) return "just now";
  if (seconds >= 0 && seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  return date.toLocaleString();
}

/** 3725.2 → "1 h 2 min"; 42 → "42 s". */
export function formatDuration(secs) {
  const s = Math.max(0, Math.floor(Number(secs) || 0));
  const d = Math.floor(s / 86400);
  const hrs = Math.floor((s % 86400) / 3600);
  const min = Math.floor((s % 3600) / 60);
  if (d) return `${d} d ${hrs} h`;
  if (hrs) return `${hrs} h ${min} min`;
  if (min) return `${min} min ${s % 60} s`;
  return `${s} s`;
}

let counter = 0;
/** A unique element id (labels need one). */
export function uid(prefix = "f") {
  counter += 1;
  return `${prefix}-${counter}`;
}
