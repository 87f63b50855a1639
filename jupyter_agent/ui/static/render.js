// Draw a run's view state (see jupyter_agent/view/reduce.py for its shape).
//
// One renderer for the live anywidget view and the JupyterLab MIME renderer. Dependency-free;
// model and tool text is untrusted, so it goes in through textContent or the escaping markdown
// renderer, never as HTML.
//
//   renderRun(el, view, opts)      draw once (clears `el`)
//   renderRunInto(el, view, opts)  draw again and again into the same `el`: unchanged parts
//                                  keep their nodes, so open <details>, expanded outputs, the
//                                  "Other" text and focus survive streaming updates.
//
//   disposeRun(el)                 stop the card's ticker and forget its state (a live
//                                  view calls it when it is torn down)
//
// opts = {onAction(msg)} | undefined. Without onAction (static mode) nothing is clickable
// except the expand/collapse toggles and the copy buttons; no time ticks and there is no stop
// button, since a saved run cannot be stopped. Live mode adds both while the run is running.

import { renderAnsweredAsk, renderPendingAsk } from "./ask.js";
import { append, copyButton, details, formatInt, h } from "./dom.js";
import { STATUS_LABELS, renderError, renderFooter } from "./footer.js";
import { renderMarkdown } from "./markdown.js";
import { renderEndedElsewhere, trackCard } from "./elsewhere.js";
import { renderHint } from "./hint.js";
import { renderOutput } from "./output.js";
import { renderPlan } from "./plan.js";
import { elapsedNode, stopButton, syncTicker, waitingForModel, waitingNode } from "./progress.js";
import { renderTool, toolState } from "./tool.js";

/** Per-element state kept between renderRunInto calls. */
const STATES = new WeakMap();

function newState() {
  return {
    root: null,
    cache: new Map(), // key -> {sig, node}
    open: new Map(), // details key -> open chosen by the user
    expanded: new Set(), // collapsible keys the user expanded
    other: new Map(), // ask call_id -> "Other" text typed so far
    sent: new Map(), // ask call_id -> the answer message already sent
    stopSent: new Map(), // run_id -> when its stop message was sent (ms)
    ticker: 0, // the interval that updates ticking times (progress.js)
  };
}

function renderHeader(state, view, act) {
  const head = h("header", "ja-header");
  const status = view.status || "running";
  append(
    head,
    h("span", "ja-agent", view.agent || "agent"),
    view.model ? h("span", "ja-model", view.model) : null,
  );
  const badge = h("span", `ja-badge ja-status-${status}`, STATUS_LABELS[status] || status);
  badge.dataset.status = status;
  head.appendChild(badge);
  append(head, elapsedNode(view, Boolean(act)));
  if (act && status === "running") head.appendChild(stopButton(state, view, act));
  return head;
}

function renderReasoning(state, key, item, streaming) {
  const text = item.text || "";
  const words = text.trim() ? text.trim().split(/\s+/).length : 0;
  const label = streaming ? "Thinking…" : "Reasoning";
  const box = details(
    state,
    key,
    "ja-reasoning",
    [h("span", "ja-reasoning-label", label), h("span", "ja-dim", `${formatInt(words)} words`)],
    false,
  );
  box.appendChild(h("div", "ja-reasoning-text", text));
  return box;
}

/** Markdown with a copy button on each code block. */
function markdownBlock(text) {
  const md = renderMarkdown(text);
  for (const pre of md.querySelectorAll("pre")) {
    const wrap = h("div", "ja-codeblock");
    pre.replaceWith(wrap);
    append(wrap, copyButton(() => pre.textContent, "code"), pre);
  }
  return md;
}

/** The row under an answer: its copy button (copies the markdown source). */
function answerActions(text) {
  const row = h("div", "ja-actions");
  row.appendChild(copyButton(() => text, "answer"));
  return row;
}

/** A reply's text; `isAnswer` (the newest reply) adds a copy button for its markdown. */
function renderText(item, isAnswer) {
  const box = h("div", `ja-text${item.withdrawn ? " ja-withdrawn" : ""}`);
  if (item.withdrawn) box.appendChild(h("div", "ja-withdrawn-label", "withdrawn by stop gate"));
  box.appendChild(markdownBlock(item.text || ""));
  if (isAnswer) box.appendChild(answerActions(item.text || ""));
  return box;
}

function renderGate(state, key, item) {
  const box = h("div", "ja-gate");
  append(
    box,
    h("div", "ja-gate-head", "Stop gate: the answer was withdrawn and the run goes on"),
    item.reason ? h("div", "ja-gate-reason", item.reason) : null,
  );
  if (item.feedback) {
    const more = details(state, key, "ja-gate-feedback", ["Feedback to the model"], false);
    more.appendChild(h("pre", "ja-pre", item.feedback));
    box.appendChild(more);
  }
  return box;
}

function renderCompressed(item) {
  const method = item.method === "truncate" ? "truncated" : "compressed into a checkpoint";
  const text =
    `Context ${method}: ${formatInt(item.tokens_before)} → ` +
    `${formatInt(item.tokens_after)} tokens`;
  return h("div", "ja-compressed", text);
}

function renderItem(state, key, item, ctx) {
  switch (item.kind) {
    case "reasoning":
      return renderReasoning(state, key, item, ctx.streaming);
    case "text":
      return renderText(item, ctx.isAnswer);
    case "tool":
      return renderTool(state, key, item, ctx.toolState, ctx.live);
    case "gate":
      return renderGate(state, key, item);
    case "warning": // level "note": a calm line explaining a choice, nothing went wrong
      return h("div", item.level === "note" ? "ja-note" : "ja-warning", item.message || "");
    case "compressed":
      return renderCompressed(item);
    case "ask":
    case "approval": // an answered ask keeps its own kind (view/reduce.py copies the ask as the item)
      return renderAnsweredAsk(state, key, item);
    default:
      return h("div", "ja-dim", `(${item.kind || "unknown"} item)`);
  }
}

/** Return the cached node for `key` if `sig` is unchanged, else build and cache a new one. */
function cached(state, key, sig, build) {
  const hit = state.cache.get(key);
  if (hit && hit.sig === sig) return hit.node;
  const node = build();
  state.cache.set(key, { sig, node });
  return node;
}

/** Make `parent`'s children exactly `nodes`, moving only the nodes that are out of place. */
function reconcile(parent, nodes) {
  let cur = parent.firstChild;
  for (const node of nodes) {
    if (node === cur) {
      cur = cur.nextSibling;
      continue;
    }
    parent.insertBefore(node, cur);
  }
  while (cur) {
    const next = cur.nextSibling;
    parent.removeChild(cur);
    cur = next;
  }
}

function itemKey(item, index) {
  if (item.kind === "tool" && item.call_id) return `tool:${item.call_id}`;
  if ((item.kind === "ask" || item.kind === "approval") && item.call_id) {
    return `answered:${item.call_id}`;
  }
  return `${item.kind}:${index}`;
}

function lastAnswerIndex(items) {
  for (let i = items.length - 1; i >= 0; i -= 1) {
    const it = items[i];
    if (it.kind === "text" && !it.withdrawn && it.text) return i;
  }
  return -1;
}

/**
 * Whether the answer text is the typed answer's JSON, which the output table shows already
 * (a valid typed run: the same data twice, once as raw JSON, was noise). Fenced or bare.
 */
export function isTypedAnswerJson(view, text) {
  const out = view.output;
  if (!out || !out.valid || typeof text !== "string") return false;
  const bare = text.trim().replace(/^```(?:json)?\s*/, "").replace(/\s*```$/, "");
  try {
    return JSON.stringify(JSON.parse(bare)) === JSON.stringify(out.data);
  } catch (_) {
    return false;
  }
}

function draw(el, view, opts, state) {
  view = view || {};
  const onAction = opts && typeof opts.onAction === "function" ? opts.onAction : null;
  const live = Boolean(onAction);
  // Handlers built earlier read the current callback, so a cached card never calls a stale one.
  state.onAction = onAction;
  const act = (msg) => state.onAction(msg);
  const status = view.status || "running";
  const running = status === "running";

  let root = state.root;
  const fresh = !root || root.parentNode !== el;
  if (fresh) {
    el.textContent = "";
    state.cache.clear();
    root = h("div", "ja-run");
    root.appendChild(h("div", "ja-items"));
    state.root = root;
  }
  root.dataset.status = status;
  const itemsBox = root.querySelector(":scope > .ja-items");

  // Remember focus so a rebuilt "Other" field gets it back.
  const active = root.contains(document.activeElement) ? document.activeElement : null;
  const focusKey = active && active.dataset ? active.dataset.focusKey : undefined;
  const selection =
    active && "selectionStart" in active ? [active.selectionStart, active.selectionEnd] : null;

  const items = Array.isArray(view.items) ? view.items : [];
  const waitingOn = view.ask && !view.ask.answered ? view.ask.call_id : null;
  const answerAt = lastAnswerIndex(items);
  // A typed answer is drawn once: its field table (output.js), not also its JSON text.
  const typedAt = answerAt >= 0 && isTypedAnswerJson(view, items[answerAt].text) ? answerAt : -1;
  const seen = new Set();
  const toolStates = [];
  const itemNodes = items.map((item, i) => {
    if (i === typedAt) return null;
    const key = itemKey(item, i);
    seen.add(key);
    const ctx = {
      live,
      // Only a reasoning block looks different while it is the one streaming.
      streaming: item.kind === "reasoning" && running && i === items.length - 1,
      isAnswer: i === answerAt,
      toolState: null,
    };
    if (item.kind === "tool") {
      const waiting = Boolean(waitingOn) && item.call_id === waitingOn;
      ctx.toolState = toolState(item, waiting, status);
      toolStates.push(ctx.toolState);
    }
    const sig = `${ctx.streaming}|${ctx.isAnswer}|${ctx.toolState}|${live}|${JSON.stringify(item)}`;
    return cached(state, key, sig, () => renderItem(state, key, item, ctx));
  });
  if (answerAt < 0 && view.answer) {
    // A view whose items were trimmed still shows its final answer.
    itemNodes.push(
      cached(state, "answer", view.answer, () => {
        const box = h("div", "ja-text ja-answer");
        append(box, markdownBlock(view.answer), answerActions(view.answer));
        return box;
      }),
    );
    seen.add("answer");
  }
  // Only a live card waits: a saved card, or one whose kernel is gone ("this card no longer
  // updates"), would contradict the line drawn above it.
  if (live && waitingForModel(view, items, toolStates)) {
    seen.add("waiting");
    itemNodes.push(cached(state, "waiting", "", waitingNode));
  }

  const headSig = [live, status, view.run_id, view.agent, view.model, view.started_at]
    .concat((view.footer || {}).seconds)
    .join("|");
  seen.add("header");
  const top = [cached(state, "header", headSig, () => renderHeader(state, view, live ? act : null))];
  if (state.elsewhere) {
    seen.add("elsewhere");
    top.unshift(cached(state, "elsewhere", "", renderEndedElsewhere));
  }
  if (view.plan) {
    seen.add("plan");
    top.push(cached(state, "plan", JSON.stringify(view.plan), () => renderPlan(state, view.plan)));
  }
  top.push(itemsBox);
  if (view.output) {
    seen.add("output");
    top.push(cached(state, "output", JSON.stringify(view.output), () => renderOutput(view)));
  }
  const ask = view.ask;
  if (ask) {
    const key = `ask:${ask.call_id}`;
    seen.add(key);
    const sig = `${live}|${JSON.stringify(ask)}`;
    top.push(
      cached(state, key, sig, () =>
        ask.answered
          ? renderAnsweredAsk(state, key, ask)
          : renderPendingAsk(state, ask, live ? act : null),
      ),
    );
  }
  top.push(renderError(view, !items.length && !view.answer), renderHint(view), renderFooter(view));

  for (const key of state.cache.keys()) if (!seen.has(key)) state.cache.delete(key);
  reconcile(itemsBox, itemNodes.filter(Boolean));
  reconcile(root, top.filter(Boolean));
  if (fresh) el.appendChild(root);
  syncTicker(state, live && running);

  if (focusKey && !root.contains(active)) {
    const again = root.querySelector(`[data-focus-key="${CSS.escape(focusKey)}"]`);
    if (again) {
      again.focus();
      if (selection && again.setSelectionRange) again.setSelectionRange(...selection);
    }
  }
}

/**
 * Draw `view` into `el`, replacing whatever `el` held.
 *
 * @param {HTMLElement} el
 * @param {object} view  the view state (jupyter_agent/view/reduce.py)
 * @param {{onAction: (msg: object) => void} | undefined} opts  live mode when onAction is given
 */
export function renderRun(el, view, opts) {
  disposeRun(el);
  const state = newState();
  STATES.set(el, state); // so disposeRun can stop its ticker
  draw(el, view, opts, state);
}

/**
 * Draw `view` into `el`, reusing what an earlier call drew there: call it on every update.
 *
 * Unchanged items keep their DOM nodes, so the user's open/closed sections, expanded outputs,
 * the "Other" text and the focus survive; an answer already sent is never sent twice.
 */
export function renderRunInto(el, view, opts) {
  let state = STATES.get(el);
  if (!state) {
    state = newState();
    STATES.set(el, state);
  }
  // A card still waiting while another card of its run shows it ended (./elsewhere.js): the
  // run's end, static (its question was answered elsewhere; a click would go nowhere).
  const ended = trackCard(el, view, () => {
    if (STATES.get(el) === state) renderRunInto(el, view, opts);
  });
  state.elsewhere = Boolean(ended);
  if (ended) draw(el, ended, undefined, state);
  else draw(el, view, opts, state);
}

/** Stop `el`'s ticker and forget what renderRunInto kept for it (a torn-down live view). */
export function disposeRun(el) {
  const state = STATES.get(el);
  if (state) syncTicker(state, false);
  STATES.delete(el);
}
