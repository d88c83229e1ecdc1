// The one connection to the daemon: an RpcClient on `/rpc`, signed in with `initialize`. Other modules call
// through `call` / `tryCall` and learn about the connection from the events "connected", "closed" and "lost".

import { reportError } from "./errors.js";
import { emit } from "./events.js";
import { ConnectionError, RpcClient, RpcError, rpcUrl } from "./rpc.js";

const CLIENT_INFO = { name: "zeroclaw-panel", version: "1" };

let client = null; // the signed-in RpcClient
let init = null; // its initialize result
let lost = false; // its socket closed under us
let closing = false; // we closed it on purpose
let restarted = false; // this connection reached another daemon process than the one before (its pid changed)

// Daemon → panel traffic, set by the chat view (answerDaemonWith).
let daemon = {
  onNotification: (_method, _params) => {},
  onRequest: async (method, _params) => {
    throw new RpcError({ code: -32601, message: `Method not found: ${method}`, data: { kind: "method_not_found" } });
  },
};

export function answerDaemonWith(handlers) {
  daemon = { ...daemon, ...handlers };
}

/** Open `/rpc` and call `initialize` with the token; announce that this client answers elicitation. */
export async function connect(token) {
  const rpc = new RpcClient(rpcUrl(), {
    onNotification: (method, params) => daemon.onNotification(method, params),
    onRequest: (method, params) => daemon.onRequest(method, params),
    onClose: (event) => onClose(rpc, event),
    onStrayError: (err) => reportError("The daemon reported", err),
    onProtocolError: (text) => reportError("Protocol", new ConnectionError(text)),
  });
  await rpc.open();
  let result;
  try {
    result = await rpc.call(
      "initialize",
      { protocolVersion: 1, authToken: token, clientInfo: CLIENT_INFO, clientCapabilities: { elicitation: {} } },
      { timeoutMs: 15000 },
    );
  } catch (err) {
    rpc.close();
    throw err;
  }
  if (client && client !== rpc) client.close();
  restarted = init !== null && init.serverPid !== result.serverPid;
  client = rpc;
  init = result;
  lost = false;
  closing = false;
  emit("connected", result);
  return result;
}

/** Close the connection on purpose (sign-out, a failed sign-in). */
export function disconnect() {
  if (client) {
    closing = true;
    client.close();
  }
  client = null;
  init = null;
  emit("closed");
}

function onClose(rpc, event) {
  if (rpc !== client || closing) return;
  lost = true;
  emit("lost", event);
}

/** Signed in (the connection may have dropped since). */
export const signedIn = () => client !== null;
/** Signed in and the socket still open. */
export const connected = () => client !== null && !lost;
/** The daemon was restarted while the connection was down (a reconnect reached another process). */
export const daemonRestarted = () => restarted;
/** `principal` of the initialize result: {id, admin, …}, or null. */
export const principal = () => init?.principal ?? null;

/** @import { ZeroclawCallArgs, ZeroclawMethods } from "./zeroclaw" (generated: zeroclaw docs typescript) */

/**
 * Call a method; rejects with RpcError / ConnectionError. Checked against the generated map (`tsc --checkJs`).
 * @type {<M extends keyof ZeroclawMethods>(method: M, ...args: ZeroclawCallArgs<M>) => Promise<ZeroclawMethods[M]["result"]>}
 */
export function call(method, params = {}) {
  if (!client) return Promise.reject(new ConnectionError("Not connected to the daemon"));
  return client.call(method, params);
}

/**
 * A call that reports its failure and resolves to `undefined` instead of throwing.
 * @type {<M extends keyof ZeroclawMethods>(context: string, method: M, ...args: ZeroclawCallArgs<M>) => Promise<ZeroclawMethods[M]["result"] | undefined>}
 */
export async function tryCall(context, method, params) {
  try {
    return await call(method, params);
  } catch (err) {
    reportError(context, err);
    return undefined;
  }
}

/**
 * `tryCall` for a read nobody clicked for (a refresh, what a finished turn updates): a lost connection is not
 * reported, since the connection line says so and reconnecting reads everything again (`loadEverything`). A read
 * that went unanswered on a live connection still is.
 * @type {<M extends keyof ZeroclawMethods>(context: string, method: M, ...args: ZeroclawCallArgs<M>) => Promise<ZeroclawMethods[M]["result"] | undefined>}
 */
export async function readInBackground(context, method, params) {
  try {
    return await call(method, params);
  } catch (err) {
    const lost = err instanceof ConnectionError && (err.dropped || !connected());
    if (!lost) reportError(context, err);
    return undefined;
  }
}
