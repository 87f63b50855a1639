// When the kernel behind a live card is gone (restarted, shut down), the widget's comm is dead:
// `model.send` throws. The card must not pretend otherwise: it is drawn as a saved card (no
// button enabled) with one line saying what happened and the exact command that answers the
// run from a new cell, copyable. The answer is still waiting in the session store, so a new
// kernel can resume it.

import { append, copyButton, h } from "./dom.js";

/** The `%agent resume` command answering `view`'s waiting run as `msg` (a click) would have. */
export function resumeCommandFor(view, msg) {
  const run = view.run_id || "RUN_ID";
  if (msg && msg.how === "option" && msg.option_index) {
    return `%agent resume ${run} --option ${msg.option_index}`;
  }
  if (msg && msg.how === "other" && msg.answer) {
    return `%agent resume ${run} --answer ${JSON.stringify(String(msg.answer))}`;
  }
  if (msg && msg.how === "dismissed") return `%agent resume ${run} --dismiss`;
  return `%agent resume ${run} --option N`;
}

/** The `%agent keep|discard|undo ID` a failed click on a change row (./changes.js) meant. */
function decideCommandFor(view, msg) {
  const items = Array.isArray(view.items) ? view.items : [];
  const item = items.find((i) => i && i.kind === "tool" && i.call_id === msg.call_id);
  const id = item && item.changes ? String(item.changes.record_id || "") : "";
  return id ? `%agent ${msg.action} ${id}` : "%agent changes";
}

/** The line drawn above a card whose kernel is gone; `msg` is the click that failed, if any. */
export function renderKernelGone(view, msg) {
  const line = h("div", "ja-kernel-gone");
  line.setAttribute("role", "alert");
  if (msg && msg.type === "decide") {
    // A change row's decision is the person's to make from a new cell: the held files wait
    // in the sandbox's private folder, whatever became of the kernel (docs/sandbox.md).
    const command = decideCommandFor(view, msg);
    append(line, "The kernel of this run is gone: run ", h("code", null, command),
      " in a new cell.");
    line.appendChild(copyButton(() => command, "command"));
    return line;
  }
  if (view.status !== "ask") {
    append(line, "The kernel of this run is gone (restarted or shut down): this card no longer updates.");
    return line;
  }
  const command = resumeCommandFor(view, msg);
  append(line, "The kernel was restarted: run ", h("code", null, command), " in a new cell.");
  line.appendChild(copyButton(() => command, "command"));
  return line;
}
