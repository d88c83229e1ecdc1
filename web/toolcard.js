// A tool call's card in the transcript: name, input, approvals and questions asked while it runs, its progress and
// its output. Built-in and MCP tools (`mcp__<server>__<tool>`) look the same.

import { $, h, pretty } from "./dom.js";

export function toolCard(name, toolCallId, input) {
  const status = h("span", { class: "badge tool-status", text: "called" });
  const output = h("pre", { class: "tool-output", hidden: true });
  const extras = h("div", { class: "tool-extras" });
  const el = h(
    "details",
    { class: "tool", open: true, dataset: { toolCallId: toolCallId ?? "", tool: name } },
    h("summary", {}, h("span", { class: "tool-name mono", text: name }), " ", status, toolCallId ? h("span", { class: "muted small mono", text: ` ${toolCallId}` }) : ""),
    input === undefined ? "" : [h("div", { class: "label", text: "Input" }), h("pre", { class: "tool-input", text: pretty(input) })],
    extras,
    h("div", { class: "label output-label", text: "Output", hidden: true }),
    output,
  );
  const card = {
    el,
    name,
    done: false,
    interactions: [],
    running() {
      status.textContent = "running";
      status.className = "badge tool-status running";
    },
    attach(node, interaction) {
      extras.append(node);
      if (interaction) this.interactions.push(interaction);
    },
    setOutput(text) {
      this.done = true;
      status.textContent = "done";
      status.className = "badge tool-status done";
      output.textContent = pretty(text ?? "");
      output.hidden = false;
      $(".output-label", el).hidden = false;
      for (const item of this.interactions) item.expire?.("The tool finished before this was answered.");
    },
    progress(value, total, message) {
      // An MCP tool's progress (`tool_progress`, R-MCP-3): "running 2/3 · message".
      const count = total == null ? `${value}` : `${value}/${total}`;
      status.textContent = `running ${count}${message ? ` · ${message}` : ""}`;
    },
    settle() {
      if (!this.done) {
        status.textContent = "no result";
        status.className = "badge tool-status";
        for (const item of this.interactions) item.expire?.("The turn ended before this was answered.");
      }
    },
  };
  return card;
}

