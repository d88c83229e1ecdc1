// The daemon's status: the summary in the top bar and the Status tab's details (`status`).

import { byId, formatDuration, h } from "./dom.js";
import { principal, signedIn, tryCall } from "./connection.js";
import { on } from "./events.js";

const el = {
  line: byId("status-line"),
  details: byId("status-details"),
  refresh: byId("refresh-status"),
};

export async function refreshStatus() {
  const status = await tryCall("Daemon status", "status", {});
  if (!status) return;
  const live = status.activeSessions ?? 0;
  const conns = status.connections ?? 0;
  el.line.replaceChildren(
    h("span", { class: "stat", text: `v${status.serverVersion ?? "?"}` }),
    h("span", { class: "stat", text: `up ${formatDuration(status.uptimeSecs)}` }),
    h("span", { class: "stat", text: `${live} live session${live === 1 ? "" : "s"}` }),
    h("span", { class: "stat", text: `${conns} connection${conns === 1 ? "" : "s"}` }),
  );
  const who = principal();
  const rows = [
    ["Version", status.serverVersion],
    ["Protocol", status.protocolVersion],
    ["PID", status.pid],
    ["Uptime", formatDuration(status.uptimeSecs)],
    ["Live sessions", live],
    ["Connections", conns],
    ["Endpoint", status.endpoint],
    ["Gateway", status.gateway?.url ?? "off"],
    ["Data dir", status.dataDir],
    ["Config file", status.configFile],
    ["Signed in as", `${who?.id ?? "?"}${who?.admin ? " (admin)" : ""}`],
  ];
  el.details.replaceChildren(...rows.flatMap(([k, v]) => [h("dt", { text: k }), h("dd", { class: "mono", text: v ?? "—" })]));
}

export function initStatus() {
  el.refresh.addEventListener("click", refreshStatus);
  on("lost", () => {
    el.line.textContent = "disconnected";
  });
  on("tab", (name) => {
    if (name === "status" && signedIn()) refreshStatus();
  });
}
