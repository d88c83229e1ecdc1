// What turns cost (R-MODEL-5), in words: `turn_complete.usage` under a reply, session/usage's `total` in the chat head.

import { h } from "./dom.js";

/** A turn's `turn_complete.usage` as the line under its reply. */
export const usageLine = (usage) =>
  h("div", { class: "usage muted small", dataset: { costUsd: String(usage.costUsd) }, text: formatUsage(usage) });

/** Tokens and cost (a turn's `turn_complete.usage`, or session/usage's `total`) in words: "4 in · 6 out · $0.000016". */
export function formatUsage(usage) {
  const parts = [`${usage.inputTokens ?? 0} in`, `${usage.outputTokens ?? 0} out`];
  if (usage.cacheReadTokens) parts.push(`${usage.cacheReadTokens} cache read`);
  if (usage.cacheWriteTokens) parts.push(`${usage.cacheWriteTokens} cache write`);
  parts.push(formatUsd(usage.costUsd));
  return `Tokens: ${parts.join(" · ")}`;
}

function formatUsd(amount) {
  if (amount === null || amount === undefined) return "no price set";
  if (amount === 0) return "$0";
  return `$${amount >= 1 ? amount.toFixed(2) : Number(amount.toPrecision(2))}`;
}
