// One line of a run's card: the tools the run offers the model ("Tools: a, b, c"), from the
// view's `tools` (the tools_offered event), and while an update_plan call is on its way
// (the view's `plan_status`) what it does. A run that offered no tools (%%chat) draws nothing.

import { h } from "./dom.js";

const PLAN_STATUS = { generating: "Generating the plan…", updating: "Updating the plan…" };

/** Why a named agent ran when the cell did not name it (view/bundle.py ROLE_SOURCES). */
const ROLE_SOURCES = { session: " (this session's agent)", intent: " (chosen for the request)" };

/** "Agent sh · " when a named agent ran (view.role), else "". */
function roleText(view) {
  const role = view.role;
  if (!role || typeof role !== "object" || typeof role.name !== "string" || !role.name) return "";
  return `Agent ${role.name.slice(0, 80)}${ROLE_SOURCES[role.source] || ""} · `;
}

/** The "Agent x · Tools: ..." line, or null when the run offered no tool set. */
export function renderToolsLine(view) {
  const tools = view.tools;
  if (!Array.isArray(tools)) return null;
  const line = h("div", "ja-tools-line",
    `${roleText(view)}Tools: ${tools.length ? tools.join(", ") : "none"}`);
  line.dataset.part = "tools";
  const doing = view.status === "running" && PLAN_STATUS[view.plan_status];
  if (doing) {
    const note = h("span", "ja-plan-status", ` · ${doing}`);
    note.dataset.status = view.plan_status;
    line.appendChild(note);
  }
  return line;
}
