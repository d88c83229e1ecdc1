// The tabs (Sessions, Config, Status): which view is shown. Showing one announces "tab" with its name.

import { $$, byId } from "./dom.js";
import { emit } from "./events.js";

const tabs = $$(".tabs [role=tab]");
const views = new Map(tabs.map((tab) => [tab.dataset.view, byId(`view-${tab.dataset.view}`)]));

export function selectTab(name) {
  for (const tab of tabs) {
    const shown = tab.dataset.view === name;
    tab.setAttribute("aria-selected", shown ? "true" : "false");
    views.get(tab.dataset.view).hidden = !shown;
  }
  emit("tab", name);
}

export const tabShown = (name) => !views.get(name).hidden;

export function initTabs() {
  for (const tab of tabs) tab.addEventListener("click", () => selectTab(tab.dataset.view));
}
