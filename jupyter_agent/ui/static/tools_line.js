// One line of a run's card: the tools the run offers the model ("Tools: a, b, c"), from the
// view's `tools` (the tools_offered event). A run that offered none (%%chat) draws nothing.

import { h } from "./dom.js";

/** The "Tools: ..." line, or null when the run offered no tool set. */
export function renderToolsLine(view) {
  const tools = view.tools;
  if (!Array.isArray(tools)) return null;
  const line = h("div", "ja-tools-line", `Tools: ${tools.length ? tools.join(", ") : "none"}`);
  line.dataset.part = "tools";
  return line;
}
