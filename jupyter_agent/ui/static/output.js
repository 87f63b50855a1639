// A typed run's answer (docs/behaviour.md §10.14): the instance as a small field table, or the
// errors that made it invalid. Values are text nodes: a model's text is never markup.

import { append, h } from "./dom.js";

const MAX_FIELDS = 40;

function shown(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text && text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

/** The table of `view.output` (null when the run is not typed). */
export function renderOutput(view) {
  const out = view.output;
  if (!out) return null;
  const box = h("div", `ja-output ja-output-${out.valid ? "valid" : "invalid"}`);
  append(box, h("div", "ja-output-head", `${out.schema} · ${out.valid ? "valid" : "invalid"}`));
  const table = h("table", "ja-output-table");
  for (const [name, value] of Object.entries(out.data || {}).slice(0, MAX_FIELDS)) {
    const row = h("tr");
    append(row, h("td", "ja-output-field", name), h("td", "ja-output-value", shown(value)));
    table.appendChild(row);
  }
  append(box, table);
  for (const err of (out.errors || []).slice(0, 10)) append(box, h("div", "ja-output-error", err));
  return box;
}
