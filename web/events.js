// A tiny event bus for what several modules react to; the one module that knows something happened announces it.
// The names are fixed, so a misspelt one fails at once instead of never firing:
//   connected (initialize result) · closed (signed out, or a sign-in failed) · lost ({code, reason}: the socket
//   dropped) · signed-out · sessions-changed (the list was re-read) · agents (alias list from the config) ·
//   tab (the name of the tab now shown)

const NAMES = new Set(["connected", "closed", "lost", "signed-out", "sessions-changed", "agents", "tab"]);
const listeners = new Map();

function known(name) {
  if (!NAMES.has(name)) throw new Error(`unknown panel event ${name}`);
  return name;
}

/** Call `fn(...args)` on every `emit(name, ...args)`, in the order the listeners were added. */
export function on(name, fn) {
  const list = listeners.get(known(name)) ?? [];
  list.push(fn);
  listeners.set(name, list);
}

export function emit(name, ...args) {
  for (const fn of listeners.get(known(name)) ?? []) fn(...args);
}
