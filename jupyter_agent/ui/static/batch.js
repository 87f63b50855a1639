// The batch progress card: counts, usage, speed, the latest results and the stop buttons.
//
// Draws the batch view (see jupyter_agent/batch/progress.py for its shape). Used by the live
// anywidget (the default export) and usable by a MIME renderer of
// application/vnd.jupyter-agent.batch+json (`renderBatch` without onAction: no buttons).
// Answers and errors are model text: they go in through textContent, never as HTML.
//
// A click on a stop button sends {type: "stop", mode: "finish" | "abort"} and dispatches the
// bubbling DOM event `jupyter-agent-stop` (detail {batch, interrupts}) for the extension.

import { append, formatCost, formatInt, formatSeconds, h } from "./dom.js";

const COUNTS = [
  ["done", "done"],
  ["failed", "failed"],
  ["running", "running"],
  ["waiting", "waiting"],
  ["ask", "asking"],
  ["skipped", "not run"],
];
const STATUS = { running: "running", done: "finished", stopped: "stopped", error: "failed" };

function header(view) {
  const models = view.models || [];
  let over = `${formatInt(view.rows)} row${view.rows === 1 ? "" : "s"}`;
  if (models.length > 1) over += ` × ${models.length} models`;
  const status = view.status || "running";
  const tone = { running: "running", done: "done", stopped: "incomplete" }[status] || "error";
  return append(
    h("header", "ja-header"),
    h("span", "ja-agent", `Batch: ${view.kind || ""} over ${over}`),
    h("span", "ja-model", `${view.engine || "thread"} · concurrency ${view.concurrency || 0}`),
    h("span", `ja-badge ja-status-${tone}`, STATUS[status] || status),
  );
}

function counts(view) {
  const c = view.counts || {};
  const row = h("div", "ja-batch-counts");
  for (const [key, label] of COUNTS) {
    append(row, append(h("span", `ja-batch-count ja-batch-${key}`),
      h("b", "", formatInt(c[key] || 0)), ` ${label}`));
  }
  const total = Math.max(1, view.total || 0);
  const bar = h("div", "ja-batch-bar");
  for (const key of ["done", "failed", "ask", "running"]) {
    const part = h("span", `ja-batch-bar-${key}`);
    part.style.width = `${(100 * (c[key] || 0)) / total}%`;
    bar.appendChild(part);
  }
  return append(h("div", ""), row, bar);
}

function usage(view) {
  let text = `${formatInt(view.input_tokens)} in / ${formatInt(view.output_tokens)} out tokens`
    + ` · cost ${formatCost(view.cost)} · ${(Number(view.rate) || 0).toFixed(1)} items/min`
    + ` · ${formatSeconds(view.elapsed)}`;
  if (view.status === "running" && view.eta !== null && view.eta !== undefined) {
    text += ` · about ${formatSeconds(view.eta)} left`;
  }
  if (view.reused) text += ` · ${formatInt(view.reused)} from an earlier run`;
  return h("div", "ja-footer", text);
}

function table(title, rows) {
  if (!rows || !rows.length) return null;
  const t = h("table", "ja-batch-table");
  const head = append(h("tr", ""), h("th", "", "row"), h("th", "", "model"),
    h("th", "", "status"), h("th", "", "answer"));
  t.appendChild(head);
  for (const r of rows) {
    append(t, append(h("tr", `ja-batch-item ja-batch-item-${r.status}`),
      h("td", "", String(r.row)), h("td", "", r.model), h("td", "", r.status),
      h("td", "", r.answer || r.error || "")));
  }
  return append(h("div", ""), h("div", "ja-batch-label", title), t);
}

function board(rows) {
  if (!rows || !rows.length) return null;
  const keys = ["model", "items", "done", "failed", "accuracy", "cost", "p50_seconds",
    "p95_seconds"].filter((k) => k in rows[0]);
  const t = h("table", "ja-batch-table");
  t.appendChild(append(h("tr", ""), ...keys.map((k) => h("th", "", k.replace("_seconds", " s")))));
  for (const r of rows) {
    t.appendChild(append(h("tr", ""), ...keys.map((k) => {
      const v = r[k];
      if (v === null || v === undefined) return h("td", "", "–");
      if (k === "accuracy") return h("td", "", `${(100 * v).toFixed(1)}%`);
      if (k === "cost") return h("td", "", formatCost(v));
      if (k.endsWith("seconds")) return h("td", "", formatSeconds(v));
      return h("td", "", typeof v === "number" ? formatInt(v) : String(v));
    })));
  }
  return append(h("div", ""), h("div", "ja-batch-label", "Comparison"), t);
}

function stopButtons(view, onAction, sent) {
  if (!onAction || view.status !== "running") return null;
  const row = h("div", "ja-batch-stop");
  const spent = (mode) => sent.mode === "abort" || sent.mode === mode;
  const buttons = [];
  const button = (mode, label) => {
    const b = h("button", "ja-option", label);
    b.disabled = spent(mode);
    b.addEventListener("click", () => {
      // A second click, or a finish after an abort, sends nothing more: each stop is also
      // kernel interrupts, and one too many would make the coordinator stop waiting.
      if (spent(mode)) return;
      sent.mode = mode;
      onAction({ type: "stop", mode });
      for (const other of buttons) other.disabled = spent(other.dataset.mode);
    });
    b.dataset.mode = mode;
    buttons.push(b);
    return b;
  };
  return append(row, button("finish", "Stop (let running items finish)"),
    button("abort", "Stop now (abort running items)"));
}

/** Draw the batch view into `el` (cleared). opts = {onAction(msg)} | undefined. */
export function renderBatch(el, view, opts, sent = {}) {
  el.textContent = "";
  const root = h("div", "ja-run ja-batch");
  append(root, header(view || {}), counts(view || {}), usage(view || {}));
  if (view && view.stop_reason) root.appendChild(h("div", "ja-warning", view.stop_reason));
  const live = view && view.status === "running";
  append(root,
    table(live ? "Latest results" : "Results", live ? view.latest : view && (view.preview || view.latest)),
    board(view && view.board),
    stopButtons(view || {}, opts && opts.onAction, sent));
  el.appendChild(root);
}

/** The DOM event a stop click also dispatches (labextension/src/stop.ts listens for it). */
const STOP_EVENT = "jupyter-agent-stop";

/**
 * How many kernel interrupts a stop click stands for. The coordinator counts interrupts
 * (jupyter_agent/batch/coordinator.py): the first lets running items finish, the second aborts
 * them. So "finish" is one; "abort" is two, or one more when a "finish" went out before.
 */
function stopInterrupts(mode, finishSent) {
  return mode === "abort" && !finishSent ? 2 : 1;
}

export default {
  render({ model, el }) {
    const sent = {};
    let finishSent = false;
    // A kernel reads widget messages only between cells: during a `%%toolloop --over` batch
    // the message waits for the cell to end. So the stop also goes out as a bubbling DOM event
    // the JupyterLab extension turns into kernel interrupts. The message still goes: it is what
    // stops a batch started with wait=False, where the kernel is free to read it.
    const onAction = (msg) => {
      if (msg && msg.type === "stop") {
        const detail = { batch: true, interrupts: stopInterrupts(msg.mode, finishSent) };
        if (msg.mode === "finish") finishSent = true;
        el.dispatchEvent(new CustomEvent(STOP_EVENT, { bubbles: true, detail }));
      }
      model.send(msg);
    };
    const opts = { onAction };
    let frame = 0;
    const draw = () => renderBatch(el, model.get("view"), opts, sent);
    const schedule = () => {
      if (!frame) {
        frame = requestAnimationFrame(() => {
          frame = 0;
          draw();
        });
      }
    };
    model.on("change:view", schedule);
    draw();
    return () => {
      model.off("change:view", schedule);
      if (frame) cancelAnimationFrame(frame);
      frame = 0;
    };
  },
};
