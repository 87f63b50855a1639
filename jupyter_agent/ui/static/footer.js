// The end of a run's card: the note on how it ended (error, abort, limits) and the footer line
// (model, rounds, tokens, cost, time).

import { append, formatCost, formatInt, formatSeconds, h, isKnown } from "./dom.js";
import { renderToolsLine } from "./tools_line.js";

/** The words of each run status (the header badge and the end note). */
export const STATUS_LABELS = {
  running: "running",
  done: "done",
  ask: "waiting for you",
  aborted: "aborted",
  error: "error",
  max_rounds: "max rounds",
  incomplete: "incomplete",
  invalid: "invalid answer",
  superseded: "superseded",
};

/**
 * The footer: model, rounds, tokens, cost, time. A count or a price the view does not know
 * (null) reads "—" or "unknown", never 0: zero tokens and an unpriced model are different.
 */
export function renderFooter(view) {
  const f = view.footer || {};
  const foot = append(h("footer", "ja-footer"), renderToolsLine(view));
  const rounds = Number(f.rounds) || 0;
  // Every model call has input tokens, so 0 in and 0 out means no call was accounted (none
  // answered yet, or an interrupted one): not known, not zero. So is the cost of no call.
  const accounted = Number(f.input_tokens) > 0 || Number(f.output_tokens) > 0;
  const parts = [
    ["model", f.model || view.model || "", ""],
    ["rounds", `${rounds} round${rounds === 1 ? "" : "s"}`, ""],
    accounted
      ? (f.estimated
        ? ["tokens", `about ${formatInt(f.input_tokens)} in / ${formatInt(f.output_tokens)} out `
          + "tokens (estimated)", "The server reported no usage: counted here, not by the model"]
        : ["tokens", `${formatInt(f.input_tokens)} in / ${formatInt(f.output_tokens)} out tokens`,
          ""])
      : ["tokens", "tokens unknown", "No token counts were reported yet"],
    accounted && isKnown(f.cost)
      ? ["cost", `cost ${formatCost(f.cost)}`, ""]
      : ["cost", "cost unknown", "No price is known for this model or these calls"],
    // A live run's time ticks in the header; here it shows once the run ends.
    // A run resumed after its question ran in parts: the whole run's time, and how many.
    ["time", view.status !== "running" && isKnown(f.seconds)
      ? `${formatSeconds(f.seconds)}${Number(f.parts) > 1 ? ` in ${f.parts} parts` : ""}` : "", ""],
    ["cached", Number(f.cached) > 0
      ? `${f.cached} cached (saved ${formatCost(Number(f.saved) || 0)})` : "",
      ""],
  ].filter((p) => p[1]);
  parts.forEach(([name, text, title], i) => {
    if (i) foot.appendChild(h("span", "ja-sep", "·"));
    const part = h("span", "ja-footer-part", text);
    part.dataset.part = name;
    if (title) {
      part.title = title;
      part.classList.add("ja-unknown");
    }
    foot.appendChild(part);
  });
  return foot;
}

export function renderError(view, empty) {
  let text = view.error;
  if (!text && view.status === "aborted") {
    // An interrupt leaves no message: say what happened rather than show an empty card.
    text = empty
      ? "the run was stopped before the model answered."
      : "the run was stopped; what it did until then is above.";
  }
  if (!text) return null;
  const label = view.status === "error" ? "Error" : STATUS_LABELS[view.status] || "Note";
  const line = h("div", `ja-error ja-error-${view.status || "error"}`);
  append(line, h("strong", null, `${label[0].toUpperCase()}${label.slice(1)}: `), text);
  return line;
}

