// The batch progress card: counts, usage, speed, the latest results and the stop buttons.
//
// Draws the batch view (see jupyter_agent/batch/progress.py for its shape). Used by the live
// anywidget (the default export) and usable by a MIME renderer of
// application/vnd.jupyter-agent.batch+json (`renderBatch` without onAction: no buttons).
// Answers and errors are model text: they go in through textContent, never as HTML.
// A saved notebook's payload is untrusted too (edited, damaged, from a newer version): every
// field is checked for its type, texts are cut, tables are capped, and class names only ever
// take values from the fixed lists here.
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
const ITEM_STATUSES = ["done", "max_rounds", "incomplete", "error", "aborted", "ask", "skipped",
  "running", "invalid"];
/** Rows drawn in a results table; the kernel sends 20 at most (batch/api.py). */
export const MAX_ROWS = 50;
const MAX_TEXT = 300;

function isObject(x) {
  return x !== null && typeof x === "object" && !Array.isArray(x);
}

/** A short text from any value: a string cut at MAX_TEXT, else "" (never "[object Object]"). */
function str(x, max = MAX_TEXT) {
  if (typeof x === "number" && Number.isFinite(x)) return String(x);
  if (typeof x !== "string") return "";
  return x.length <= max ? x : `${x.slice(0, max - 1)}…`;
}

function num(x) {
  const n = Number(x);
  return typeof x === "number" && Number.isFinite(n) ? n : 0;
}

/** The batch's status, "unknown" when the payload has none that this card knows. */
function statusOf(view) {
  return typeof view.status === "string" && view.status in STATUS ? view.status : "unknown";
}

function header(view) {
  const models = Array.isArray(view.models) ? view.models : [];
  const rows = num(view.rows);
  let over = `${formatInt(rows)} row${rows === 1 ? "" : "s"}`;
  if (models.length > 1) over += ` × ${models.length} models`;
  const status = statusOf(view);
  const tone = { running: "running", done: "done", stopped: "incomplete" }[status] || "error";
  const badge = h("span", `ja-badge ja-status-${tone}`, STATUS[status] || status);
  badge.dataset.status = status;
  return append(
    h("header", "ja-header"),
    h("span", "ja-agent", `Batch: ${str(view.kind, 40)} over ${over}`),
    h("span", "ja-model",
      `${str(view.engine, 40) || "thread"} · concurrency ${formatInt(num(view.concurrency))}`),
    badge,
  );
}

function counts(view) {
  const c = isObject(view.counts) ? view.counts : {};
  const row = h("div", "ja-batch-counts");
  for (const [key, label] of COUNTS) {
    append(row, append(h("span", `ja-batch-count ja-batch-${key}`),
      h("b", "", formatInt(num(c[key]))), ` ${label}`));
  }
  const total = Math.max(1, num(view.total));
  const bar = h("div", "ja-batch-bar");
  for (const key of ["done", "failed", "ask", "running"]) {
    const part = h("span", `ja-batch-bar-${key}`);
    part.style.width = `${Math.min(100, Math.max(0, (100 * num(c[key])) / total))}%`;
    bar.appendChild(part);
  }
  return append(h("div", ""), row, bar);
}

function usage(view) {
  // A null cost is an unpriced model's: "cost unknown", never 0. A rate of 0 is no rate
  // (under a second, or nothing finished in this run): left out, not "0.0 items/min".
  const cost = typeof view.cost === "number" && Number.isFinite(view.cost)
    ? `cost ${formatCost(view.cost)}` : COST_UNKNOWN;
  const rate = num(view.rate) > 0 ? ` · ${num(view.rate).toFixed(1)} items/min` : "";
  let text = `${formatInt(view.input_tokens)} in / ${formatInt(view.output_tokens)} out tokens`
    + ` · ${cost}${rate} · ${formatSeconds(view.elapsed)}`;
  if (view.status === "running" && view.eta !== null && view.eta !== undefined) {
    text += ` · about ${formatSeconds(view.eta)} left`;
  }
  if (num(view.reused)) text += ` · ${formatInt(num(view.reused))} from an earlier run`;
  if (num(view.lost_rerun)) {
    text += ` · re-run after a worker was lost: ${formatInt(num(view.lost_rerun))}`;
  }
  if (num(view.lost_held)) {
    text += ` · not re-run (side effects), check them: ${formatInt(num(view.lost_held))}`;
  }
  if (num(view.cached)) text += ` · ${cacheLine(view)}`;
  return h("div", "ja-footer", text);
}

/** `1 loss`, `2 losses`: the count and the right form of the word. */
export function plural(n, word, words) {
  return `${formatInt(n)} ${n === 1 ? word : (words || `${word}s`)}`;
}

/** What a cost needing a price the project does not know says (view/batch.py's twin). */
const COST_UNKNOWN = "cost unknown: set a price in the profile";

/** Answers from the cache are not sent; their saving is unknown without a price, never 0. */
function cacheLine(view) {
  const priced = typeof view.saved === "number" && Number.isFinite(view.saved) &&
    typeof view.cost === "number";
  const worth = priced ? `saved ${formatCost(view.saved)}`
    : "saved unknown: set a price in the profile";
  return `${plural(num(view.cached), "answer")} from the cache, not sent (${worth})`;
}

/** An item's score (any scale a score function chose); "–" when it has none. */
function score(x) {
  return typeof x === "number" && Number.isFinite(x) ? String(Number(x.toFixed(3))) : "–";
}

/** Where a finished batch's rows the card leaves out are (view/batch.py's WHERE_ALL). */
const WHERE_ALL = "every row is in the batch's results DataFrame: `_agent_batch.results` " +
  "after a `--over` cell, or the table named by `--out`";

function more(t, shown, all, columns, where) {
  if (all <= shown) return;
  const td = h("td", "ja-batch-more",
    `… ${formatInt(all - shown)} more not shown${where ? `: ${where}` : ""}`);
  td.colSpan = columns;
  t.appendChild(append(h("tr", ""), td));
}

function table(title, rows, total) {
  if (!Array.isArray(rows) || !rows.length) return null;
  const items = rows.filter(isObject);
  if (!items.length) return null;
  const shown = items.slice(0, MAX_ROWS);
  const scored = shown.some((r) => typeof r.score === "number");
  // A batch with a judge: each row's judge score (1 to the judge's scale; "–" unjudged).
  const judged = shown.some((r) => "judge" in r);
  const t = h("table", "ja-batch-table");
  const head = append(h("tr", ""), h("th", "", "row"), h("th", "", "model"),
    h("th", "", "status"), h("th", "", "answer"), scored && h("th", "", "score"),
    judged && h("th", "", "judge"));
  t.appendChild(head);
  for (const r of shown) {
    const status = ITEM_STATUSES.includes(r.status) ? r.status : "other";
    append(t, append(h("tr", `ja-batch-item ja-batch-item-${status}`),
      h("td", "", str(r.row, 12)), h("td", "", str(r.model, 80)), h("td", "", str(r.status, 20)),
      h("td", "", str(r.answer) || str(r.error)), scored && h("td", "", score(r.score)),
      judged && h("td", "ja-batch-judge-score", score(r.judge))));
  }
  // A finished batch's preview holds the first rows only: `total` says how many there are.
  const all = Math.max(items.length, Number.isInteger(total) ? total : 0);
  more(t, shown.length, all, 4 + (scored ? 1 : 0) + (judged ? 1 : 0),
    all > items.length ? WHERE_ALL : "");
  return append(h("div", ""), h("div", "ja-batch-label", title), t);
}

const BOARD_KEYS = ["model", "items", "done", "failed", "accuracy", "cost", "p50_seconds",
  "p95_seconds"];

function boardCell(k, v) {
  if (k === "model") return h("td", "", str(v, 80));
  if (k === "cost" && (typeof v !== "number" || !Number.isFinite(v))) {
    return h("td", "ja-batch-unknown", "unknown: set a price in the profile");
  }
  if (typeof v !== "number" || !Number.isFinite(v)) return h("td", "", "–");
  if (k === "accuracy") return h("td", "", `${(100 * v).toFixed(1)}%`);
  if (k === "cost") return h("td", "", formatCost(v));
  if (k.endsWith("seconds")) return h("td", "", formatSeconds(v));
  return h("td", "", formatInt(v));
}

function board(rows) {
  if (!Array.isArray(rows)) return null;
  const items = rows.filter(isObject);
  if (!items.length) return null;
  const keys = BOARD_KEYS.filter((k) => k in items[0]);
  const shown = items.slice(0, MAX_ROWS);
  const t = h("table", "ja-batch-table");
  t.appendChild(append(h("tr", ""), ...keys.map((k) => h("th", "", k.replace("_seconds", " s")))));
  for (const r of shown) t.appendChild(append(h("tr", ""), ...keys.map((k) => boardCell(k, r[k]))));
  more(t, shown.length, items.length, keys.length);
  return append(h("div", ""), h("div", "ja-batch-label", "Comparison"), t);
}

function stopButtons(view, onAction, sent) {
  if (!onAction || view.status !== "running") return null;
  const row = h("div", "ja-batch-stop");
  const spent = (mode) => sent.mode === "abort" || sent.mode === mode;
  const buttons = [];
  const button = (mode, label) => {
    const b = h("button", mode === "abort" ? "ja-btn ja-danger" : "ja-btn", label);
    b.type = "button";
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

/**
 * Draw the batch view into `el`. opts = {onAction(msg)} | undefined; `sent` is the live view's
 * memory across draws (which stop went out, and the stop row).
 *
 * The stop row is kept across draws while the batch runs: the card is redrawn several times a
 * second, and a click is a press and a release; a row rebuilt between the two would lose the
 * click (neither button would get it). So a redraw replaces everything but the row.
 */
/** The LLM judge's summary (batch/judge.py): mean score, off-scale answers, calls, cost, and
 * with two models the win rate. */
function judgeLine(j) {
  if (!isObject(j)) return null;
  const mean = typeof j.mean === "number" ? `${j.mean.toFixed(2)}/${j.scale}` : "–";
  const calls = Number(j.calls) || 0;
  const cached = Number(j.cached) || 0;
  const sent = Math.max(0, calls - cached);
  // Sent apart from cached: a fully cached judge sent nothing (view/batch.py judge_calls).
  const callText = !cached ? `${plural(sent, "call")} sent`
    : !sent ? `${plural(cached, "call")} from the cache, none sent`
      : `${plural(sent, "call")} sent, ${formatInt(cached)} from the cache`;
  const cost = j.priced === false || typeof j.cost !== "number" || !Number.isFinite(j.cost)
    ? COST_UNKNOWN : `cost ${j.cost.toFixed(4)}`;
  let text = `Judge (${str(j.model, 100)}): mean ${mean} over ` +
    `${plural(Number(j.judged) || 0, "answer")} · ${Number(j.invalid) || 0} off-scale` +
    ` · ${callText} · ${cost}`;
  if (Number(j.failed) > 0) text += ` · ${Number(j.failed)} failed`;
  const pw = j.pairwise;
  if (isObject(pw) && Number(pw.compared) > 0) {
    text += ` · ${str(pw.a, 100)} vs ${str(pw.b, 100)}: ${plural(Number(pw.wins_a) || 0, "win")},` +
      ` ${plural(Number(pw.wins_b) || 0, "loss", "losses")}, ${plural(Number(pw.ties) || 0, "tie")}` +
      ` (win rate ${Math.round(Number(pw.win_rate_a) * 100)}%)`;
  }
  return h("div", "ja-batch-judge", text);
}

export function renderBatch(el, view, opts, sent = {}) {
  const v = isObject(view) ? view : {};
  const live = v.status === "running";
  const done = Array.isArray(v.preview) && v.preview.length ? v.preview : v.latest;
  // Built whole before anything is replaced: a payload that makes a part throw leaves `el`
  // as it was, for the caller to fall back on.
  const parts = [header(v), counts(v), usage(v),
    str(v.stop_reason) ? h("div", "ja-warning", str(v.stop_reason, 1000)) : null,
    judgeLine(v.judge),
    table(live ? "Latest results" : "Results", live ? v.latest : done,
      live ? 0 : v.results_total),
    board(v.board)].filter(Boolean);
  const onAction = opts && opts.onAction;
  const kept = live && onAction && sent.row && el.contains(sent.row) ? sent.row : null;
  if (kept) {
    const root = kept.parentNode;
    root.dataset.status = statusOf(v);
    for (const child of [...root.childNodes]) if (child !== kept) root.removeChild(child);
    for (const part of parts) root.insertBefore(part, kept);
    return;
  }
  const row = stopButtons(v, onAction, sent);
  const root = h("div", "ja-run ja-batch");
  root.dataset.status = statusOf(v);
  append(root, ...parts, row);
  sent.row = row;
  el.textContent = "";
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

/** The live batch card: what anywidget calls for each batch widget (through ./loader.js). */
export const BATCH_CARD = {
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

export default BATCH_CARD;
