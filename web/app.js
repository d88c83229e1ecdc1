// The zeroclaw web control panel (SPEC R-GW-5): plain ES modules loaded by the browser, no framework, no build
// step, nothing fetched from elsewhere. It talks to the daemon only through the public WebSocket JSON-RPC surface
// (`/rpc`). This module only wires the others together; docs/panel.md has the map of which file owns what.
//
// Rules kept throughout: every daemon-provided string is rendered as text (dom.js never uses innerHTML);
// every failed call is shown in words (code, kind, message, context such as data.index) — never swallowed.

import { adoptSession, initChat, onDaemonNotification, onDaemonRequest, openSession, resumeViews } from "./chat.js";
import { initConfig, loadConfig } from "./config.js";
import { answerDaemonWith } from "./connection.js";
import { reportError } from "./errors.js";
import { on } from "./events.js";
import { initRules, loadRules } from "./rules.js";
import { initSessions, refreshSessions } from "./sessions.js";
import { initSignIn, startSignIn } from "./signin.js";
import { initStatus, refreshStatus } from "./status.js";
import { initTabs } from "./tabs.js";

const REFRESH_MS = 15000;

/** What a signed-in page reads (after sign-in and after a reconnect). */
async function loadEverything() {
  await Promise.all([refreshStatus(), loadConfig(), refreshSessions(), loadRules()]);
  await resumeViews();
}

// Status and the session list are re-read every REFRESH_MS while connected.
let timer = null;
function stopRefresh() {
  clearInterval(timer);
  timer = null;
}
function startRefresh() {
  stopRefresh();
  timer = setInterval(() => {
    refreshStatus();
    refreshSessions();
  }, REFRESH_MS);
}

initSignIn({ load: loadEverything });
initTabs();
initSessions({ open: (id) => openSession(id), created: adoptSession });
initChat();
initConfig();
initRules();
initStatus();
answerDaemonWith({ onNotification: onDaemonNotification, onRequest: onDaemonRequest });
on("connected", startRefresh);
on("closed", stopRefresh);
on("lost", stopRefresh);

window.addEventListener("unhandledrejection", (event) => reportError("Unexpected failure", event.reason));
window.addEventListener("error", (event) => reportError("Unexpected failure", event.error ?? new Error(event.message)));

startSignIn();
