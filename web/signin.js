// Sign-in and sign-out: the token form, the token kept in this tab (sessionStorage), who is signed in, and the
// banner with Reconnect when the socket drops. What to load once signed in is the caller's (initSignIn).

import { byId, h } from "./dom.js";
import { connect, connected, disconnect, signedIn } from "./connection.js";
import { clearErrors, reportError, showInline } from "./errors.js";
import { emit, on } from "./events.js";
import { RpcError, describeError } from "./rpc.js";

const TOKEN_KEY = "zeroclaw.token";

const el = {
  signinView: byId("signin-view"),
  appView: byId("app-view"),
  form: byId("signin-form"),
  token: byId("token"),
  button: byId("signin-button"),
  error: byId("signin-error"),
  signout: byId("signout"),
  whoami: byId("whoami"),
  banner: byId("conn-banner"),
  bannerText: byId("conn-banner-text"),
  reconnect: byId("reconnect"),
};

let loadEverything = async () => {};

function showSignIn(message = "") {
  el.appView.hidden = true;
  el.signinView.hidden = false;
  showInline(el.error, message);
  el.token.focus();
}

async function signIn(token) {
  el.button.disabled = true;
  showInline(el.error, "");
  try {
    await connect(token);
    sessionStorage.setItem(TOKEN_KEY, token);
    el.token.value = "";
    el.signinView.hidden = true;
    el.appView.hidden = false;
    await loadEverything();
  } catch (err) {
    sessionStorage.removeItem(TOKEN_KEY);
    disconnect();
    showSignIn(`Sign-in failed. ${describeError(err)}`);
  } finally {
    el.button.disabled = false;
  }
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  disconnect();
  emit("signed-out");
  clearErrors();
  showSignIn("Signed out.");
}

// A dropped connection is tried again by itself: after 1 s, then twice as long each time (at most 30 s), so a
// network blip heals without a click and the followed sessions carry on from their last seq (follow.js).
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30000;
const retry = { timer: null, delay: RETRY_FIRST_MS, busy: false };

/** Sign in again with the stored token; true once connected. `auto`: a timed retry, its failure goes to the banner. */
async function reconnect({ auto = false } = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) {
    showSignIn("Sign in again.");
    return false;
  }
  if (retry.busy) {
    if (auto) scheduleRetry(); // a click is trying right now; keep the timed retries going in case it fails
    return false;
  }
  retry.busy = true;
  try {
    await connect(token);
  } catch (err) {
    if (err instanceof RpcError && err.code === -32010) {
      sessionStorage.removeItem(TOKEN_KEY);
      showSignIn(`Sign in again. ${describeError(err)}`);
    } else if (auto) {
      el.bannerText.textContent = `Connection to the daemon lost; trying again in ${retry.delay / 1000} s (${describeError(err)}).`;
      scheduleRetry();
    } else reportError("Reconnect", err);
    return false;
  } finally {
    retry.busy = false;
  }
  await loadEverything();
  return true;
}

function scheduleRetry() {
  clearTimeout(retry.timer);
  retry.timer = setTimeout(() => {
    retry.timer = null;
    if (signedIn() && !connected()) reconnect({ auto: true });
  }, retry.delay);
  retry.delay = Math.min(retry.delay * 2, RETRY_MAX_MS);
}

function stopRetrying() {
  clearTimeout(retry.timer);
  retry.timer = null;
  retry.delay = RETRY_FIRST_MS;
}

function showPrincipal(init) {
  const principal = init.principal || {};
  el.banner.hidden = true;
  el.whoami.replaceChildren(
    h("span", { class: "mono", text: principal.id ?? "unknown" }),
    principal.admin ? h("span", { class: "badge admin", text: "admin" }) : null,
  );
  el.whoami.title = `Signed in as ${principal.id ?? "unknown"}`;
}

function showLost(event) {
  el.bannerText.textContent = `Connection to the daemon lost (WebSocket close code ${event.code}${event.reason ? `: ${event.reason}` : ""}); reconnecting…`;
  el.banner.hidden = false;
  scheduleRetry();
}

/** `load()`: what to read once signed in (and after a reconnect). */
export function initSignIn({ load }) {
  loadEverything = load;
  el.form.addEventListener("submit", (event) => {
    event.preventDefault();
    const token = el.token.value.trim();
    if (!token) {
      showInline(el.error, "Enter a token (it starts with zc_).");
      return;
    }
    signIn(token);
  });
  el.signout.addEventListener("click", signOut);
  el.reconnect.addEventListener("click", () => reconnect());
  on("connected", showPrincipal);
  on("connected", stopRetrying);
  on("closed", stopRetrying);
  on("lost", showLost);
}

/** Sign in with the token this tab kept, else show the form. */
export function startSignIn() {
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) signIn(saved);
  else showSignIn();
}
