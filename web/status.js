// The daemon's status: the summary in the top bar and the Status tab's details (`status`).

import { byId, formatDuration, h } from "./dom.js";
import { principal, readInBackground, signedIn } from "./connection.js";
import { on } from "./events.js";

const el = {
  line: byId("status-line"),
  details: byId("status-details"),
  refresh: byId("refresh-status"),
  mcp: byId("mcp-servers"),
};

export async function refreshStatus() {
  const status = await readInBackground("Daemon status", "status", {});
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
  await refreshMcp();
}

// The MCP servers and their states (`mcp/status`, R-MCP-4): one row each, its tools when ready, its error if any.
async function refreshMcp() {
  const answer = await readInBackground("MCP servers", "mcp/status", {});
  if (!answer) return; // not read: what is shown stays
  const servers = answer.servers ?? [];
  if (!servers.length) {
    el.mcp.replaceChildren(h("li", { class: "muted", text: "No MCP server configured or started." }));
    return;
  }
  el.mcp.replaceChildren(
    ...servers.map((s) =>
      h(
        "li",
        { class: "mcp-server", dataset: { server: s.name, state: s.state } },
        h("span", { class: "mono", text: s.name }),
        " ",
        h("span", { class: `badge mcp-${s.state}`, text: s.state }),
        s.tools?.length ? h("span", { class: "muted small", text: ` ${s.tools.length} tools: ${s.tools.join(", ")}` }) : "",
        s.error ? h("div", { class: "error small", text: s.error }) : "",
      ),
    ),
  );
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
