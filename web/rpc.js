// JSON-RPC 2.0 over the gateway's WebSocket (`/rpc`, one message per text frame; SPEC R-GW-4, R-BIDI).
// Requests are correlated by id (answers may arrive out of order); the daemon's own requests
// (`elicitation/create`) are answered with the same id and exactly one of result / error.

/** A JSON-RPC error object from the daemon: `code`, `message`, `data` (with `data.kind`). */
export class RpcError extends Error {
  constructor(error) {
    super(typeof error?.message === "string" ? error.message : "error without a message");
    this.name = "RpcError";
    this.code = Number.isInteger(error?.code) ? error.code : null;
    this.data = error && typeof error.data === "object" && error.data !== null ? error.data : {};
  }
}

/**
 * The connection itself failed: could not connect, closed, timed out. `dropped`: the socket closed while the call
 * was out, so the daemon may have received it (a prompt sent then goes on running there, R-MULTI-3).
 */
export class ConnectionError extends Error {
  constructor(message, { dropped = false } = {}) {
    super(message);
    this.name = "ConnectionError";
    this.dropped = dropped;
  }
}

/** The URL of `/rpc` on the origin that served the page (same origin: the gateway's Origin check passes). */
export function rpcUrl(loc = window.location) {
  return `${loc.protocol === "https:" ? "wss" : "ws"}://${loc.host}/rpc`;
}

export class RpcClient {
  /**
   * handlers: onNotification(method, params), onRequest(method, params) → Promise<result> (throw an RpcError
   * to answer with an error), onClose({code, reason, wasClean}), onStrayError(RpcError) for errors the daemon
   * sends with `id: null` (oversize frame, connection cap …), onProtocolError(text).
   */
  constructor(url, handlers = {}) {
    this.url = url;
    this.handlers = handlers;
    this.pending = new Map();
    this.nextId = 1;
    this.ws = null;
    this.closed = false;
  }

  /** Open the socket; rejects with a ConnectionError if it does not open within `timeoutMs`. */
  open(timeoutMs = 10000) {
    return new Promise((resolve, reject) => {
      let settled = false;
      let ws;
      try {
        ws = new WebSocket(this.url);
      } catch (err) {
        reject(new ConnectionError(`Cannot open ${this.url}: ${err.message}`));
        return;
      }
      this.ws = ws;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        reject(new ConnectionError(`No connection to ${this.url} within ${timeoutMs / 1000} s`));
        ws.close();
      }, timeoutMs);
      ws.addEventListener("open", () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve();
      });
      ws.addEventListener("message", (event) => this._onMessage(event.data));
      ws.addEventListener("close", (event) => {
        clearTimeout(timer);
        const reason = `Connection to the daemon closed (code ${event.code}${event.reason ? `: ${event.reason}` : ""})`;
        this._failAll(new ConnectionError(reason, { dropped: true }));
        if (!settled) {
          settled = true;
          reject(new ConnectionError(`Cannot connect to ${this.url} (code ${event.code})`));
          return;
        }
        if (!this.closed) this.handlers.onClose?.({ code: event.code, reason: event.reason, wasClean: event.wasClean });
        this.closed = true;
      });
    });
  }

  /** Call `method`; resolves with the result, rejects with RpcError / ConnectionError. */
  call(method, params = {}, { timeoutMs = 0 } = {}) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new ConnectionError("Not connected to the daemon"));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const entry = { resolve, reject, method, timer: null };
      if (timeoutMs > 0) {
        entry.timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new ConnectionError(`No answer to ${method} within ${timeoutMs / 1000} s`));
        }, timeoutMs);
      }
      this.pending.set(id, entry);
      this._send({ jsonrpc: "2.0", id, method, params });
    });
  }

  close(code = 1000) {
    this.closed = true;
    this._failAll(new ConnectionError("Signed out"));
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) this.ws.close(code);
  }

  _send(message) {
    try {
      this.ws.send(JSON.stringify(message));
    } catch (err) {
      this.handlers.onProtocolError?.(`Could not send to the daemon: ${err.message}`);
    }
  }

  _failAll(error) {
    const entries = Array.from(this.pending.values());
    this.pending.clear();
    for (const entry of entries) {
      clearTimeout(entry.timer);
      entry.reject(error);
    }
  }

  _onMessage(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      this.handlers.onProtocolError?.("The daemon sent a frame that is not JSON");
      return;
    }
    if (!message || typeof message !== "object" || Array.isArray(message)) {
      this.handlers.onProtocolError?.("The daemon sent a frame that is not a JSON object");
      return;
    }
    if (typeof message.method === "string") {
      if ("id" in message && message.id !== null && message.id !== undefined) this._answer(message);
      else this.handlers.onNotification?.(message.method, message.params ?? {});
      return;
    }
    const entry = this.pending.get(message.id);
    if (!entry) {
      if (message.error) this.handlers.onStrayError?.(new RpcError(message.error));
      else this.handlers.onProtocolError?.("The daemon answered a request this page did not send");
      return;
    }
    this.pending.delete(message.id);
    clearTimeout(entry.timer);
    if (message.error) entry.reject(new RpcError(message.error));
    else entry.resolve(message.result);
  }

  async _answer(message) {
    const { id, method, params } = message;
    const handler = this.handlers.onRequest;
    try {
      if (!handler) throw new RpcError({ code: -32601, message: `Method not found: ${method}`, data: { kind: "method_not_found" } });
      const result = await handler(method, params ?? {});
      this._send({ jsonrpc: "2.0", id, result: result ?? null });
    } catch (err) {
      const error =
        err instanceof RpcError
          ? { code: err.code ?? -32603, message: err.message, data: err.data }
          : { code: -32603, message: "The panel could not handle the request", data: { kind: "internal_error" } };
      this._send({ jsonrpc: "2.0", id, error });
    }
  }
}

const INDEX_NOTE = (i) => `entry index ${i}`;

/**
 * Every error in words: "Error -32602 (invalid_params): invalid value — entry index 1; property
 * limits.max_sessions; limits.max_sessions: Input should be a valid integer".
 */
export function describeError(err) {
  if (err instanceof RpcError) {
    const data = err.data || {};
    const head = `Error ${err.code ?? "?"}${data.kind ? ` (${data.kind})` : ""}: ${err.message}`;
    const parts = [];
    if (Number.isInteger(data.index)) parts.push(INDEX_NOTE(data.index));
    if (typeof data.prop === "string") parts.push(`property ${data.prop}`);
    if (typeof data.grant === "string") parts.push(`needs grant ${data.grant}`);
    if (typeof data.agent === "string") parts.push(`agent ${data.agent}`);
    if (typeof data.name === "string") parts.push(`limit ${data.name}${data.limit !== undefined ? ` = ${data.limit}` : ""}`);
    if (Array.isArray(data.supported)) parts.push(`supported versions ${data.supported.join(", ")}`);
    if (typeof data.error_id === "string") parts.push(`error id ${data.error_id}`);
    if (Array.isArray(data.errors)) {
      for (const e of data.errors.slice(0, 5)) {
        if (e && typeof e === "object") parts.push(`${e.field ?? "?"}: ${e.message ?? e.type ?? "invalid"}`);
      }
    }
    return parts.length ? `${head} — ${parts.join("; ")}` : head;
  }
  if (err instanceof ConnectionError) return err.message;
  return `Unexpected failure in the panel: ${err?.message ?? String(err)}`;
}
