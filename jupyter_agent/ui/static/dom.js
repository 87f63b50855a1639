// Small DOM and formatting helpers shared by the run renderer's parts.
//
// Everything here builds elements with textContent, never innerHTML: view data comes from a
// model and from tools, so it is treated as untrusted text.

/** Create an element with a class name and optional text content. */
export function h(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null && text !== "") node.textContent = String(text);
  return node;
}

/** Append children (nodes or strings; falsy entries are skipped) to `parent`; return it. */
export function append(parent, ...children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false || child === "") continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return parent;
}

/** A whole number with thousands separators. */
export function formatInt(n) {
  // Not toLocaleString: its first call loads locale data, which costs a cold render dearly.
  return String(Math.round(Number(n) || 0)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Seconds as a short duration: "0.42 s", "12.3 s", "2 min 5 s". */
export function formatSeconds(s) {
  const v = Number(s) || 0;
  if (v < 10) return `${v.toFixed(2)} s`;
  if (v < 60) return `${v.toFixed(1)} s`;
  const m = Math.floor(v / 60);
  return `${m} min ${Math.round(v - m * 60)} s`;
}

/** A cost with enough digits to be meaningful for small amounts. */
export function formatCost(c) {
  const v = Number(c) || 0;
  if (v === 0) return "0";
  if (v < 0.01) return v.toPrecision(2);
  return v.toFixed(v < 1 ? 4 : 2);
}

/** Pretty JSON for a tool's arguments (a JSON string or a value); raw text if it won't parse. */
export function prettyJson(value) {
  if (value === null || value === undefined) return "";
  if (typeof value !== "string") return JSON.stringify(value, null, 2);
  const text = value.trim();
  if (!text) return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return value; // still streaming, or the model wrote invalid JSON: show it as is
  }
}

/** A one-line summary of a tool's arguments: `key=value, ...`, cut to `max` characters. */
export function argsSummary(value, max = 90) {
  let obj = value;
  if (typeof value === "string") {
    try {
      obj = JSON.parse(value);
    } catch {
      return clip(value.replace(/\s+/g, " "), max);
    }
  }
  if (obj && typeof obj === "object" && !Array.isArray(obj)) {
    const parts = Object.entries(obj).map(([k, v]) => {
      const shown = typeof v === "string" ? JSON.stringify(clip(v, 40)) : JSON.stringify(v);
      return `${k}=${shown}`;
    });
    return clip(parts.join(", "), max);
  }
  return clip(JSON.stringify(obj) ?? "", max);
}

/** `text` cut to `max` characters with an ellipsis. */
export function clip(text, max) {
  const s = String(text ?? "");
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** The first non-empty line of `text`. */
export function firstLine(text) {
  const s = String(text ?? "");
  const m = /^\s*(.*)/.exec(s);
  return m ? m[1] : "";
}

/**
 * A `<details>` element whose open state survives re-renders.
 *
 * `state.open` maps a key to the state the user chose; a user click records it, so a rebuilt
 * node opens or closes as the user left it, and otherwise uses `defaultOpen`. With `fill`, the
 * body is built by `fill(node)` the first time the element is open, not before.
 */
export function details(state, key, className, summaryChildren, defaultOpen, fill) {
  const node = h("details", className);
  node.dataset.key = key;
  const summary = append(h("summary", "ja-summary"), ...summaryChildren);
  node.appendChild(summary);
  node.open = state.open.has(key) ? state.open.get(key) : Boolean(defaultOpen);
  // Record on click (fires before the toggle, also for Enter/Space on the summary), not on the
  // `toggle` event: that one also fires for our own programmatic default.
  summary.addEventListener("click", () => state.open.set(key, !node.open));
  if (fill) {
    // Build the body only when it is first shown: a run has hundreds of closed cards.
    if (node.open) fill(node);
    else {
      const onToggle = () => {
        if (!node.open) return;
        node.removeEventListener("toggle", onToggle);
        fill(node);
      };
      node.addEventListener("toggle", onToggle);
    }
  }
  return node;
}

/**
 * A `<pre>` showing at most `limit` characters of `text`, with a show-more toggle beyond that.
 * The expanded state is kept in `state.expanded` under `key`.
 */
export function collapsiblePre(state, key, className, text, limit = 600) {
  const wrap = h("div", "ja-collapsible");
  const pre = h("pre", className);
  wrap.appendChild(pre);
  const full = String(text ?? "");
  if (full.length <= limit) {
    pre.textContent = full;
    return wrap;
  }
  const button = h("button", "ja-more");
  button.type = "button";
  const show = () => {
    const open = state.expanded.has(key);
    // Cut at a line break near the limit when there is one, so the preview reads cleanly.
    let cut = full.lastIndexOf("\n", limit);
    if (cut < limit * 0.6) cut = limit;
    pre.textContent = open ? full : `${full.slice(0, cut)}…`;
    button.textContent = open ? "Show less" : `Show all (${formatInt(full.length)} chars)`;
    wrap.classList.toggle("ja-expanded", open);
  };
  button.addEventListener("click", () => {
    if (state.expanded.has(key)) state.expanded.delete(key);
    else state.expanded.add(key);
    show();
  });
  show();
  wrap.appendChild(button);
  return wrap;
}
