// What a running card shows about time and control: the elapsed time, the stop button and
// the "waiting for the model" line, and the one ticker that keeps every time on the card
// current between view updates.
//
// Times come from the view (`started_at` of the run and of a running tool: epoch seconds of
// the kernel's clock); the browser's clock counts from there. Only a live card ticks: a saved
// notebook's "running" run may be long dead, and a ticking time would claim otherwise.

import { formatElapsed, h, isKnown } from "./dom.js";

/** How long a sent stop waits for the run to end before the button may be pressed again. */
export const STOP_RETRY_MS = 8000;

/** The message the stop button sends (widget.js documents it). */
export function stopMessage(view) {
  return { type: "stop", run_id: view.run_id || "" };
}

/** Seconds from epoch `since` to now, never negative (the kernel's clock may run ahead). */
function secondsSince(since) {
  return Math.max(0, Date.now() / 1000 - since);
}

/**
 * The run's elapsed time, ticking; null when the view has no start time or is not live. A
 * resumed run counts on from the time its earlier parts took (`footer.seconds`), not from the
 * first start: the time it spent waiting for an answer is not its working time.
 */
export function elapsedNode(view, live) {
  if (!live || view.status !== "running" || !isKnown(view.started_at)) return null;
  const before = Number((view.footer || {}).seconds) || 0;
  const since = Number(view.started_at) - Math.max(0, before);
  const node = h("span", "ja-elapsed", formatElapsed(secondsSince(since)));
  node.dataset.since = String(since);
  node.title = "Time since the run started";
  return node;
}

/**
 * The stop button of a running run. One click sends one stop message: the button disables
 * itself and says "Stopping…"; if the run is still running after `STOP_RETRY_MS` it can be
 * pressed again (a stop the kernel never got must not leave a dead button).
 */
export function stopButton(state, view, act) {
  const runId = view.run_id || "";
  const button = h("button", "ja-stop");
  button.type = "button";
  button.title = "Stop this run (like interrupting the kernel): what ran so far is kept";
  const idle = () => {
    button.disabled = false;
    button.textContent = "■ Stop";
  };
  const busy = () => {
    button.disabled = true;
    button.textContent = "Stopping…";
  };
  const sentAt = state.stopSent.get(runId);
  const wait = sentAt === undefined ? 0 : STOP_RETRY_MS - (Date.now() - sentAt);
  const rearm = (ms) =>
    setTimeout(() => {
      state.stopSent.delete(runId);
      idle();
    }, ms);
  if (wait > 0) {
    busy();
    rearm(wait);
  } else {
    state.stopSent.delete(runId);
    idle();
  }
  button.addEventListener("click", () => {
    if (state.stopSent.has(runId)) return;
    state.stopSent.set(runId, Date.now());
    busy();
    try {
      act(stopMessage(view));
      rearm(STOP_RETRY_MS);
    } catch (err) {
      state.stopSent.delete(runId);
      idle();
      button.title = `Could not send the stop: ${err && err.message ? err.message : err}`;
    }
  });
  return button;
}

/**
 * Whether a running run is waiting for the model: no tool is active and the newest item is
 * not a reply streaming in the current round (nothing yet, or tools done, a gate, a notice).
 */
export function waitingForModel(view, items, toolStates) {
  if ((view.status || "running") !== "running") return false;
  if (toolStates.some((st) => st === "running" || st === "queued")) return false;
  const last = items[items.length - 1];
  if (!last || (last.kind !== "text" && last.kind !== "reasoning")) return true;
  // A reply of an earlier round: a new request has gone out and nothing came back yet.
  return (Number(last.round) || 0) < (Number((view.footer || {}).rounds) || 0);
}

/** The line shown while the model has not answered yet. */
export function waitingNode() {
  const node = h("div", "ja-waiting");
  node.appendChild(h("span", "ja-spinner"));
  node.appendChild(h("span", null, "Waiting for the model…"));
  node.setAttribute("role", "status");
  return node;
}

/** Rewrite every ticking time under `root` (elements with `data-since`). */
function tick(root) {
  for (const node of root.querySelectorAll("[data-since]")) {
    const since = Number(node.dataset.since);
    node.textContent = `${node.dataset.prefix || ""}${formatElapsed(secondsSince(since))}`;
  }
}

/** Start the card's ticker when `on` and it is not running; stop it when not `on`. */
export function syncTicker(state, on) {
  if (on && !state.ticker) {
    state.ticker = setInterval(() => state.root && tick(state.root), 500);
  } else if (!on && state.ticker) {
    clearInterval(state.ticker);
    state.ticker = 0;
  }
}
