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

/** True when `n` is a real number: null, undefined and NaN mean "not known". */
export function isKnown(n) {
  return n !== null && n !== undefined && n !== "" && Number.isFinite(Number(n));
}

/** What a value that is not known shows (never 0: an unknown count is not a zero count). */
export const UNKNOWN = "—";

/** A whole number with thousands separators; `UNKNOWN` when it is not known. */
export function formatInt(n) {
  if (!isKnown(n)) return UNKNOWN;
  // Not toLocaleString: its first call loads locale data, which costs a cold render dearly.
  return String(Math.round(Number(n))).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Seconds as a short duration: "0.42 s", "12.3 s", "2 min 5 s"; `UNKNOWN` when not known. */
export function formatSeconds(s) {
  if (!isKnown(s)) return UNKNOWN;
  const v = Math.max(0, Number(s));
  if (v < 10) return `${v.toFixed(2)} s`;
  if (v < 60) return `${v.toFixed(1)} s`;
  const m = Math.floor(v / 60);
  return `${m} min ${Math.round(v - m * 60)} s`;
}

/** A ticking elapsed time in whole seconds: "0 s", "42 s", "3 min 07 s", "1 h 02 min". */
export function formatElapsed(s) {
  const v = Math.max(0, Math.floor(Number(s) || 0));
  if (v < 60) return `${v} s`;
  const pad = (n) => String(n).padStart(2, "0");
  if (v < 3600) return `${Math.floor(v / 60)} min ${pad(v % 60)} s`;
  return `${Math.floor(v / 3600)} h ${pad(Math.floor((v % 3600) / 60))} min`;
}

/** A cost with enough digits to be meaningful for small amounts; "unknown" when not known. */
export function formatCost(c) {
  if (!isKnown(c)) return "unknown";
  const v = Number(c);
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
 * Put `text` on the clipboard; resolves to whether it worked.
 *
 * The Clipboard API exists only in secure contexts (https, localhost); a notebook served over
 * plain http on another host has none, so fall back to a hidden textarea and `execCommand`.
 */
export async function copyText(text) {
  const value = String(text ?? "");
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(value);
      return true;
    }
  } catch {
    // Permission refused or no focus: try the old way below.
  }
  const area = document.createElement("textarea");
  area.value = value;
  area.setAttribute("readonly", "");
  area.style.cssText = "position:fixed;top:0;left:0;width:1px;height:1px;opacity:0";
  document.body.appendChild(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

/**
 * A small "Copy" button that copies `getText()` (called at click time, so it copies the full
 * text even when only a preview is shown) and says "Copied" or "Copy failed" for a moment.
 */
export function copyButton(getText, what = "text") {
  const button = h("button", "ja-copy", "Copy");
  button.type = "button";
  button.title = `Copy the ${what} to the clipboard`;
  button.setAttribute("aria-label", `Copy the ${what}`);
  let timer = 0;
  button.addEventListener("click", async (event) => {
    // Inside a <summary> or a notebook output: the click copies, nothing else.
    event.preventDefault();
    event.stopPropagation();
    const ok = await copyText(getText());
    button.textContent = ok ? "Copied" : "Copy failed";
    button.dataset.copied = ok ? "yes" : "no";
    clearTimeout(timer);
    timer = setTimeout(() => {
      button.textContent = "Copy";
      delete button.dataset.copied;
    }, 1500);
  });
  return button;
}

/** Where a preview of `full` ends: at most `limit` characters and `maxLines` lines. */
function previewEnd(full, limit, maxLines) {
  let cut = full.length;
  let nl = -1;
  for (let i = 0; i < maxLines; i += 1) {
    nl = full.indexOf("\n", nl + 1);
    if (nl < 0) break;
  }
  if (nl >= 0) cut = nl;
  if (cut > limit) {
    // Cut at a line break near the limit when there is one, so the preview reads cleanly.
    const soft = full.lastIndexOf("\n", limit);
    cut = soft >= limit * 0.6 ? soft : limit;
  }
  return cut;
}

/**
 * A `<pre>` showing at most `limit` characters and `maxLines` lines of `text`, with a
 * show-more toggle beyond that and a copy button (which always copies the whole text).
 * Expanded, the text sits in a bounded box that scrolls (run.css), never a page-long one.
 * The expanded state is kept in `state.expanded` under `key`.
 */
export function collapsiblePre(state, key, className, text, limit = 600, maxLines = 12) {
  const full = String(text ?? "");
  const wrap = h("div", "ja-collapsible");
  // The copy button first (run.css floats it over the box's corner), so the show-more toggle
  // stays right after the text.
  wrap.appendChild(copyButton(() => full, "whole text"));
  const pre = h("pre", className);
  wrap.appendChild(pre);
  const cut = previewEnd(full, limit, maxLines);
  if (cut >= full.trimEnd().length) {
    pre.textContent = full;
    return wrap;
  }
  const lines = full.split("\n").length;
  const button = h("button", "ja-more");
  button.type = "button";
  const show = () => {
    const open = state.expanded.has(key);
    pre.textContent = open ? full : `${full.slice(0, cut)}…`;
    const size = lines > 1 ? `${formatInt(lines)} lines, ` : "";
    button.textContent = open ? "Show less" : `Show all (${size}${formatInt(full.length)} chars)`;
    button.setAttribute("aria-expanded", String(open));
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
