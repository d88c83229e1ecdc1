// The Config tab: `config/get` (masked) as a filterable table of dotted properties, the single-property form
// (`config/set`, `config/delete`) and the batch table (`config/set-many`, the failing row marked by data.index).
// Reading the config also announces "agents" (the keys of `agents`) for the new-session form.

import { $, $$, byId, h } from "./dom.js";
import { call, signedIn } from "./connection.js";
import { reportError, showInline } from "./errors.js";
import { emit, on } from "./events.js";
import { RpcError, describeError } from "./rpc.js";
/** @import { Config } from "./zeroclaw" */

const el = {
  error: byId("config-error"),
  filter: byId("config-filter"),
  rows: $("tbody", byId("config-table")),
  reload: byId("reload-config"),
  setForm: byId("config-set"),
  prop: byId("cfg-prop"),
  value: byId("cfg-value"),
  reset: byId("cfg-delete"),
  setResult: byId("cfg-set-result"),
  batchForm: byId("config-batch"),
  batchRows: byId("batch-rows"),
  batchAdd: byId("batch-add"),
  batchResult: byId("batch-result"),
};

let config = null; // the last config/get result

/** Flatten the config into dotted property paths (maps and tables become paths; lists stay values). */
function flatten(value, prefix = "", out = []) {
  if (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length) {
    for (const [key, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${key}` : key, out);
  } else if (prefix) {
    out.push([prefix, value]);
  }
  return out;
}

export async function loadConfig() {
  if (!signedIn()) return;
  try {
    config = /** @type {Config} */ (await call("config/get", {}));
    showInline(el.error, "");
    render();
    const agents = config && typeof config.agents === "object" && config.agents ? Object.keys(config.agents) : [];
    emit("agents", agents.length ? agents : ["default"]);
  } catch (err) {
    showInline(el.error, `Cannot read the config. ${describeError(err)}`);
    reportError("Read config (the agent list falls back to \u201cdefault\u201d)", err);
    emit("agents", ["default"]);
  }
}

function render() {
  const filter = el.filter.value.trim().toLowerCase();
  const rows = flatten(config ?? {}).filter(([prop]) => !filter || prop.toLowerCase().includes(filter));
  el.rows.replaceChildren(
    ...rows.map(([prop, value]) =>
      h(
        "tr",
        { dataset: { prop } },
        h("td", { class: "mono prop", text: prop }),
        h("td", { class: "mono value", text: JSON.stringify(value) ?? "" }),
        h("td", {}, h("button", { type: "button", class: "ghost small", text: "Edit", on: { click: () => editProp(prop, value) } })),
      ),
    ),
  );
}

function editProp(prop, value) {
  el.prop.value = prop;
  el.value.value = JSON.stringify(value) ?? "";
  el.value.focus();
  el.setForm.scrollIntoView({ block: "nearest" });
}

/** A value typed by the user: JSON when it parses, else the text itself as a string. */
function parseValue(text) {
  const trimmed = text.trim();
  if (trimmed === "") return "";
  try {
    return JSON.parse(trimmed);
  } catch {
    return text;
  }
}

async function setOne(event) {
  event.preventDefault();
  const prop = el.prop.value.trim();
  if (!prop) {
    showInline(el.setResult, "Enter a property path, for example agents.default.model.");
    return;
  }
  const value = parseValue(el.value.value);
  try {
    const result = await call("config/set", { prop, value });
    showInline(el.setResult, `Set ${result.prop} = ${JSON.stringify(value)}.`, "ok");
    await loadConfig();
  } catch (err) {
    showInline(el.setResult, `Not set. ${describeError(err)}`);
  }
}

async function deleteOne() {
  const prop = el.prop.value.trim();
  if (!prop) {
    showInline(el.setResult, "Enter the property path to reset.");
    return;
  }
  try {
    const result = await call("config/delete", { prop });
    showInline(el.setResult, `Reset ${result.prop} to its default.`, "ok");
    await loadConfig();
  } catch (err) {
    showInline(el.setResult, `Not reset. ${describeError(err)}`);
  }
}

function addBatchRow(prop = "", value = "") {
  const propInput = h("input", { class: "batch-prop", placeholder: "limits.max_sessions", spellcheck: "false", value: prop, "aria-label": "Property" });
  const valueInput = h("input", { class: "batch-value", placeholder: "JSON value", spellcheck: "false", value, "aria-label": "Value" });
  const remove = () => {
    row.remove();
    numberBatchRows();
  };
  const row = h(
    "tr",
    { class: "batch-row" },
    h("td", { class: "batch-index muted mono" }),
    h("td", {}, propInput),
    h("td", {}, valueInput),
    h("td", {}, h("button", { type: "button", class: "ghost small", "aria-label": "Remove row", text: "×", on: { click: remove } })),
  );
  el.batchRows.append(row);
  numberBatchRows();
  return row;
}

function numberBatchRows() {
  $$("tr", el.batchRows).forEach((row, i) => {
    $(".batch-index", row).textContent = String(i);
    row.dataset.index = String(i);
  });
}

async function applyBatch(event) {
  event.preventDefault();
  const out = el.batchResult;
  const rows = $$("tr", el.batchRows);
  for (const row of rows) {
    row.classList.remove("row-error");
    row.removeAttribute("aria-invalid");
  }
  const sets = rows.map((row) => ({ prop: $(".batch-prop", row).value.trim(), value: parseValue($(".batch-value", row).value) }));
  if (!sets.length) {
    showInline(out, "Add at least one row.");
    return;
  }
  try {
    const result = await call("config/set-many", { sets });
    const props = result.props || [];
    showInline(out, `Saved ${props.length} propert${props.length === 1 ? "y" : "ies"}: ${props.join(", ")}.`, "ok");
    await loadConfig();
  } catch (err) {
    const index = err instanceof RpcError && Number.isInteger(err.data?.index) ? err.data.index : null;
    if (index !== null && rows[index]) {
      rows[index].classList.add("row-error");
      rows[index].setAttribute("aria-invalid", "true");
      $(".batch-prop", rows[index]).focus();
    }
    const where = index !== null ? ` Row #${index} is marked; nothing was saved.` : " Nothing was saved.";
    showInline(out, `${describeError(err)}.${where}`);
  }
}

export function initConfig() {
  el.reload.addEventListener("click", loadConfig);
  el.filter.addEventListener("input", render);
  el.setForm.addEventListener("submit", setOne);
  el.reset.addEventListener("click", deleteOne);
  el.batchAdd.addEventListener("click", () => addBatchRow());
  el.batchForm.addEventListener("submit", applyBatch);
  on("tab", (name) => {
    if (name === "config" && signedIn()) loadConfig();
  });
  addBatchRow();
  addBatchRow();
}
