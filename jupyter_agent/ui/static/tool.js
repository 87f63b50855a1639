// A tool call's card: one summary line (icon, name, arguments, state or time) that opens on
// the arguments, the error and the output.
//
// A card says only what the view knows. Its state is one of
//   queued       the call waits for an earlier one of its round to finish
//   running      the call runs now (with a ticking time when the view gives `started_at`)
//   waiting      an ask or approval card is about this call: it has not run
//   done, error  finished, with its duration ("not run" for an error that took no time at all:
//                a denied call, one over the round limit)
//   interrupted  stopped by the user (with its real duration when the view gives it), or
//                left unfinished by a run that ended: never "0.00 s"
//   denied       the user clicked Deny on its approval card: a choice, not a failure, so it is
//                drawn plain (not red, not opened), "denied by you"

import {
  append,
  argsSummary,
  clip,
  collapsiblePre,
  details,
  firstLine,
  formatElapsed,
  formatSeconds,
  h,
  isKnown,
  prettyJson,
} from "./dom.js";
import { renderChanges } from "./changes.js";
import { renderFigures, renderProposal } from "./proposal.js";

const TOOL_ICONS = {
  queued: "○",
  running: "◌",
  done: "✓",
  error: "✕",
  waiting: "?",
  interrupted: "■",
  denied: "⊘",
};

/** The error text the loop gives a call the user interrupted (loop/kernel.py). */
const INTERRUPTED_ERROR = "interrupted";

/** How the result of a call the user denied starts (session/permissions.py denial_message). */
const DENIED_BY_USER = "Permission denied by the user:";

/**
 * The state a card shows for `item`. `waiting`: the pending ask is about this call. `runStatus`:
 * the run's status; a call still "running" or "queued" in a run that is no longer running is
 * not running (an ask suspends the run, an end stops it).
 */
export function toolState(item, waiting, runStatus) {
  if (waiting) return "waiting";
  const s = item.state;
  if (s === "interrupted" || item.error === INTERRUPTED_ERROR) return "interrupted";
  if (typeof item.error === "string" && item.error.startsWith(DENIED_BY_USER)) return "denied";
  if (s === "error" || item.error) return "error";
  if (s === "done") return "done";
  const active = s === "queued" ? "queued" : "running";
  if (runStatus === "running") return active;
  return runStatus === "ask" ? "waiting" : "interrupted";
}

function timeLabel(item, st, live) {
  const node = h("span", "ja-tool-time");
  if (st === "running") {
    const since = isKnown(item.started_at) ? Number(item.started_at) : null;
    if (live && since !== null) {
      // The run's ticker (progress.js) rewrites this every second.
      node.dataset.since = String(since);
      node.dataset.prefix = "running ";
      node.textContent = `running ${formatElapsed(Date.now() / 1000 - since)}`;
    } else node.textContent = "running…";
  } else if (st === "queued") node.textContent = "queued";
  else if (st === "waiting") node.textContent = "waiting";
  else if (st === "denied") node.textContent = "denied by you";
  else if (st === "interrupted") {
    const s = Number(item.seconds);
    node.textContent =
      isKnown(item.seconds) && s > 0 ? `interrupted after ${formatSeconds(s)}` : "interrupted";
  } else if (st === "error" && isKnown(item.seconds) && Number(item.seconds) === 0) {
    // Only a call that never ran has no time at all (denied, over the round limit).
    node.textContent = "not run";
  } else node.textContent = isKnown(item.seconds) ? formatSeconds(item.seconds) : "";
  return node;
}

/** Draw the card of a tool call `item` (see jupyter_agent/view/reduce.py) in the state `st` (see `toolState`). */
export function renderTool(state, key, item, st, live) {
  const internal = Boolean(item.internal);
  const summary = [
    h("span", `ja-tool-icon ja-tool-${st}`, TOOL_ICONS[st] || "•"),
    h("span", "ja-tool-name", item.name || "(tool)"),
  ];
  if (internal) {
    const line = st === "running" || st === "queued" ? "" : firstLine(item.error || item.output);
    summary.push(h("span", "ja-tool-args", clip(line, 100)));
  } else {
    summary.push(h("span", "ja-tool-args", argsSummary(item.arguments)));
  }
  summary.push(timeLabel(item, st, live));
  const card = details(
    state,
    key,
    `ja-tool ja-tool-${st}${internal ? " ja-tool-internal" : ""}`,
    summary,
    st === "error" && !internal,
    (node) => fillTool(state, key, item, st, node),
  );
  card.dataset.callId = item.call_id || "";
  card.dataset.state = st;
  // A figure, a proposed cell or a change row is shown under the card, without opening it.
  const figures = Array.isArray(item.figures) && item.figures.length;
  const changes = item.changes && typeof item.changes === "object";
  if (!figures && !item.proposal && !changes) return card;
  const box = h("div", "ja-tool-with-extras");
  append(box, card, figures ? renderFigures(item.figures) : null);
  if (item.proposal) box.appendChild(renderProposal(state, item.proposal));
  if (changes) box.appendChild(renderChanges(state, item, live));
  return box;
}

function fillTool(state, key, item, st, card) {
  const args = prettyJson(item.arguments);
  if (args) {
    append(card, h("div", "ja-label", "Arguments"));
    card.appendChild(collapsiblePre(state, `${key}:args`, "ja-pre ja-tool-arguments", args));
  }
  // "interrupted" is the loop's marker, not a message: the output says it in words. A denied
  // call's text is what the model was told, not an error.
  const error = item.error && item.error !== INTERRUPTED_ERROR && st !== "denied" ? item.error
    : "";
  if (error) {
    append(card, h("div", "ja-label", "Error"));
    card.appendChild(collapsiblePre(state, `${key}:err`, "ja-pre ja-tool-error", error));
  }
  if (item.output && item.output !== error) {
    append(card, h("div", "ja-label", "Output"));
    card.appendChild(collapsiblePre(state, `${key}:out`, "ja-pre ja-tool-output", item.output));
  } else if (st === "done" && !error) {
    card.appendChild(h("div", "ja-dim", "(no output)"));
  } else if (st === "queued") {
    card.appendChild(h("div", "ja-dim", "Waiting for an earlier call of this round to finish."));
  }
}
