// How to answer a waiting run from a new cell: the line the kernel puts in `view.hint` while the
// run waits (ui/live.py). Drawn under the card, with its `%agent resume ...` command copyable,
// in the live widget and in a saved notebook alike; gone once the run goes on.

import { append, copyButton, h } from "./dom.js";

/** The first `%agent resume ...` command quoted in `text` (between backticks), or "". */
export function resumeCommand(text) {
  const m = /`(%agent resume [^`]*)`/.exec(text || "");
  return m ? m[1] : "";
}

/** The hint line of `view`, or null when the run does not wait or has no hint. */
export function renderHint(view) {
  if (view.status !== "ask" || !view.hint) return null;
  const line = h("div", "ja-hint");
  // Plain text, backticks dropped: the kernel's wording, never markup.
  append(line, String(view.hint).replace(/`/g, ""));
  const command = resumeCommand(view.hint);
  if (command) line.appendChild(copyButton(() => command, "command"));
  return line;
}
