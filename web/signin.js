// Sign-in and sign-out: the token form, the token kept in this tab (sessionStorage), who is signed in, and the
// banner with Reconnect when the socket drops. What to load once signed in is the caller's (initSignIn).

import { byId, h } from "./dom.js";
import { connect, disconnect } from "./connection.js";
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
  el.bannerText.textContent = `Connection to the daemon lost (WebSocket close code ${event.code}${event.reason ? `: ${event.reason}` : ""}).`;
  el.banner.hidden = false;
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
  el.reconnect.addEventListener("click", reconnect);
  on("connected", showPrincipal);
  on("lost", showLost);
}

/** Sign in with the token this tab kept, else show the form. */
export function startSignIn() {
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) signIn(saved);
  else showSignIn();
}
