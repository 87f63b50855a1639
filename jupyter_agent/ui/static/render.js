// Draw a run's view state (see jupyter_agent/ui/view.py for its shape).
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
// opts = {onAction(msg)} | undefined. Without onAction (static mode) nothing is clickable
// except the expand/collapse toggles.

import { renderAnsweredAsk, renderPendingAsk } from "./ask.js";
import {
  append,
  argsSummary,
  clip,
  collapsiblePre,
  details,
  firstLine,
  formatCost,
  formatInt,
  formatSeconds,
  h,
  prettyJson,
} from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { renderPlan } from "./plan.js";

const STATUS_LABELS = {
  running: "running",
  done: "done",
  ask: "waiting for you",
  aborted: "aborted",
  error: "error",
  max_rounds: "max rounds",
  incomplete: "incomplete",
};

const TOOL_ICONS = { running: "◌", done: "✓", error: "✕", waiting: "?" };

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
  };
}

function renderHeader(view) {
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

function renderText(item) {
  const box = h("div", `ja-text${item.withdrawn ? " ja-withdrawn" : ""}`);
  if (item.withdrawn) box.appendChild(h("div", "ja-withdrawn-label", "withdrawn by stop gate"));
  box.appendChild(renderMarkdown(item.text || ""));
  return box;
}

function renderTool(state, key, item, waiting) {
  // `waiting`: the pending ask or approval card is about this call (it has not really run).
  const st = waiting
    ? "waiting"
    : item.state === "error" || item.error
      ? "error"
      : item.state || "running";
  const internal = Boolean(item.internal);
  const summary = [
    h("span", `ja-tool-icon ja-tool-${st}`, TOOL_ICONS[st] || "•"),
    h("span", "ja-tool-name", item.name || "(tool)"),
  ];
  if (internal) {
    const line = st === "running" ? "" : firstLine(item.error || item.output);
    summary.push(h("span", "ja-tool-args", clip(line, 100)));
  } else {
    summary.push(h("span", "ja-tool-args", argsSummary(item.arguments)));
  }
  summary.push(
    h(
      "span",
      "ja-tool-time",
      st === "running" ? "running…" : st === "waiting" ? "waiting" : formatSeconds(item.seconds),
    ),
  );
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
  return card;
}

function fillTool(state, key, item, st, card) {
  const args = prettyJson(item.arguments);
  if (args) {
    append(card, h("div", "ja-label", "Arguments"));
    card.appendChild(collapsiblePre(state, `${key}:args`, "ja-pre ja-tool-arguments", args));
  }
  if (item.error) {
    append(card, h("div", "ja-label", "Error"));
    card.appendChild(collapsiblePre(state, `${key}:err`, "ja-pre ja-tool-error", item.error));
  }
  if (item.output && item.output !== item.error) {
    append(card, h("div", "ja-label", "Output"));
    card.appendChild(collapsiblePre(state, `${key}:out`, "ja-pre ja-tool-output", item.output));
  } else if (st === "done" && !item.error) {
    card.appendChild(h("div", "ja-dim", "(no output)"));
  }
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

function renderItem(state, key, item, streaming, waiting) {
  switch (item.kind) {
    case "reasoning":
      return renderReasoning(state, key, item, streaming);
    case "text":
      return renderText(item);
    case "tool":
      return renderTool(state, key, item, waiting);
    case "gate":
      return renderGate(state, key, item);
    case "warning":
      return h("div", "ja-warning", item.message || "");
    case "compressed":
      return renderCompressed(item);
    case "ask":
    case "approval": // an answered ask keeps its own kind (view.py copies the ask as the item)
      return renderAnsweredAsk(item);
    default:
      return h("div", "ja-dim", `(${item.kind || "unknown"} item)`);
  }
}

function renderFooter(view) {
  const f = view.footer || {};
  const foot = h("footer", "ja-footer");
  const est = f.estimated ? "~" : "";
  const rounds = Number(f.rounds) || 0;
  const parts = [
    f.model || view.model || "",
    `${rounds} round${rounds === 1 ? "" : "s"}`,
    `${est}${formatInt(f.input_tokens)} in / ${est}${formatInt(f.output_tokens)} out tokens`,
    `cost ${formatCost(f.cost)}`,
    // A live run's time is only known when it ends.
    Number(f.seconds) || view.status !== "running" ? formatSeconds(f.seconds) : "",
  ].filter(Boolean);
  parts.forEach((p, i) => {
    if (i) foot.appendChild(h("span", "ja-sep", "·"));
    foot.appendChild(h("span", "ja-footer-part", p));
  });
  if (f.estimated) foot.title = "~ marks token counts estimated offline";
  return foot;
}

function renderError(view) {
  if (!view.error) return null;
  const label = view.status === "error" ? "Error" : STATUS_LABELS[view.status] || "Note";
  const line = h("div", `ja-error ja-error-${view.status || "error"}`);
  append(line, h("strong", null, `${label[0].toUpperCase()}${label.slice(1)}: `), view.error);
  return line;
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
  return item.kind === "tool" && item.call_id ? `tool:${item.call_id}` : `${item.kind}:${index}`;
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
  const seen = new Set();
  const itemNodes = items.map((item, i) => {
    const key = itemKey(item, i);
    seen.add(key);
    // Only a reasoning block looks different while it is the one streaming.
    const streaming = item.kind === "reasoning" && running && i === items.length - 1;
    const waiting = item.kind === "tool" && Boolean(waitingOn) && item.call_id === waitingOn;
    const sig = `${streaming}|${waiting}|${JSON.stringify(item)}`;
    return cached(state, key, sig, () => renderItem(state, key, item, streaming, waiting));
  });
  const hasText = items.some((it) => it.kind === "text" && !it.withdrawn && it.text);
  if (!hasText && view.answer) {
    // A view whose items were trimmed still shows its final answer.
    itemNodes.push(
      cached(state, "answer", view.answer, () => {
        const box = h("div", "ja-text ja-answer");
        box.appendChild(renderMarkdown(view.answer));
        return box;
      }),
    );
    seen.add("answer");
  }

  const top = [renderHeader(view)];
  if (view.plan) {
    seen.add("plan");
    top.push(cached(state, "plan", JSON.stringify(view.plan), () => renderPlan(state, view.plan)));
  }
  top.push(itemsBox);
  const ask = view.ask;
  if (ask) {
    const key = `ask:${ask.call_id}`;
    seen.add(key);
    const sig = `${live}|${JSON.stringify(ask)}`;
    top.push(
      cached(state, key, sig, () =>
        ask.answered ? renderAnsweredAsk(ask) : renderPendingAsk(state, ask, live ? act : null),
      ),
    );
  }
  top.push(renderError(view), renderFooter(view));

  for (const key of state.cache.keys()) if (!seen.has(key)) state.cache.delete(key);
  reconcile(itemsBox, itemNodes);
  reconcile(root, top.filter(Boolean));
  if (fresh) el.appendChild(root);

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
 * @param {object} view  the view state (jupyter_agent/ui/view.py)
 * @param {{onAction: (msg: object) => void} | undefined} opts  live mode when onAction is given
 */
export function renderRun(el, view, opts) {
  STATES.delete(el);
  draw(el, view, opts, newState());
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
  draw(el, view, opts, state);
}
