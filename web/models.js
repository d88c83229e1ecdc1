// The model picker of the session on screen (R-MODEL-4): its choices are models/list for the session's agent, its
// value the session's model. Choosing one is session/configure (stored with the session, in force from its next
// provider step); a config_changed update (this tab's choice, another tab's or another client's) moves it.

import { byId, h } from "./dom.js";
import { call, connected } from "./connection.js";
import { reportError } from "./errors.js";
import { on } from "./events.js";

/** A config_changed update (R-MODEL-4) reaching a session's view: its settings, a note, and whoever shows them. */
export function applySettings(view, { agentAlias, model, temperature }) {
  view.settings = { agentAlias, model, temperature };
  view.note(`Model: ${model ?? "the provider's default"} (agent ${agentAlias}) from the next step on.`);
  view.configured(view);
}

const el = { picker: byId("chat-model") };
const listings = new Map(); // agent alias → promise of its models/list answer, read once per connection
let target = null; // {sessionId, agentAlias, model, disabled}: what the picker shows
let chosen = (_sessionId, _result) => {};

function listing(agentAlias) {
  let answer = listings.get(agentAlias);
  if (!answer) {
    answer = call("models/list", { agentAlias });
    answer.catch(() => listings.delete(agentAlias)); // asked again next time
    listings.set(agentAlias, answer);
  }
  return answer;
}

function render(ids, model) {
  const all = model && !ids.includes(model) ? [model, ...ids] : ids;
  el.picker.replaceChildren(...all.map((id) => h("option", { value: id, text: id })));
  if (model) el.picker.value = model;
}

/** Show the picker of session `sessionId`, whose agent is `agentAlias` and model `model` (null: the provider's). */
export async function showModel(sessionId, agentAlias, model, { disabled = false } = {}) {
  const shown = (target = { sessionId, agentAlias, model, disabled });
  el.picker.disabled = disabled || !connected();
  el.picker.dataset.sessionId = sessionId;
  render(model ? [model] : [], model);
  if (!agentAlias || !connected()) return;
  let answer;
  try {
    answer = await listing(agentAlias);
  } catch {
    return; // the agent's provider could not be asked: its model alone is offered
  }
  if (target !== shown) return; // another session, or new settings, came on screen meanwhile
  render((answer.models || []).map((m) => m.id), model);
  el.picker.title = answer.error ?? "";
}

async function choose() {
  const shown = target;
  if (!shown) return;
  const model = el.picker.value;
  el.picker.disabled = true;
  try {
    chosen(shown.sessionId, await call("session/configure", { sessionId: shown.sessionId, model }));
  } catch (err) {
    reportError("Switch model", err);
    if (target === shown && shown.model) el.picker.value = shown.model;
  } finally {
    if (target === shown) el.picker.disabled = shown.disabled || !connected();
  }
}

/** `onChosen(sessionId, settings)`: this page switched a session's model (settings: session/configure's answer). */
export function initModels({ onChosen }) {
  chosen = onChosen;
  el.picker.addEventListener("change", choose);
  on("connected", () => listings.clear()); // the config may have changed meanwhile
  on("signed-out", () => {
    listings.clear();
    target = null;
  });
}
