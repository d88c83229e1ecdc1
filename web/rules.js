// The Config tab's "Remembered permission rules" card (R-GUARD-3): the rules stored by "Always for this agent"
// answers (`permissions/list`), each with a Delete button (`permissions/delete`). Rules written in config.toml are
// properties of the table above (`permissions.*`, `agents.<a>.permissions.*`), not listed here.

import { $, byId, h } from "./dom.js";
import { call, signedIn } from "./connection.js";
import { showInline } from "./errors.js";
import { on } from "./events.js";
import { describeError } from "./rpc.js";

const el = {
  rows: $("tbody", byId("rules-table")),
  empty: byId("rules-empty"),
  result: byId("rules-result"),
  reload: byId("reload-rules"),
};

export async function loadRules() {
  if (!signedIn()) return;
  try {
    const { rules } = await call("permissions/list", {});
    render(rules ?? []);
  } catch (err) {
    showInline(el.result, `Cannot read the remembered rules. ${describeError(err)}`);
  }
}

function render(rules) {
  el.empty.hidden = rules.length > 0;
  el.rows.replaceChildren(
    ...rules.map((rule) =>
      h(
        "tr",
        { dataset: { ruleId: rule.ruleId } },
        h("td", { class: "mono", text: rule.agentAlias }),
        h("td", { class: "mono", text: `${rule.decision} ${rule.pattern}` }),
        h("td", { class: "mono small muted", text: rule.principal }),
        h("td", {}, h("button", { type: "button", class: "ghost small danger", text: "Delete", on: { click: () => remove(rule) } })),
      ),
    ),
  );
}

async function remove(rule) {
  try {
    await call("permissions/delete", { ruleId: rule.ruleId });
    showInline(el.result, `Deleted: ${rule.pattern} (agent ${rule.agentAlias}).`, "ok");
  } catch (err) {
    showInline(el.result, `Not deleted. ${describeError(err)}`);
  }
  await loadRules();
}

export function initRules() {
  el.reload.addEventListener("click", loadRules);
  on("tab", (name) => {
    if (name === "config" && signedIn()) loadRules();
  });
}
