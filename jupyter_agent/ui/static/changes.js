// A sandboxed command's change row, under its tool card (docs/sandbox.md): what it changed in
// the workspace (counts and the first names), what it held and why, and the person's buttons:
// Keep / Discard for held changes, Undo for applied ones. A click sends
//   {type: "decide", call_id, action}
// and the kernel (ui/decide.py) runs the same function as `%agent keep|discard|undo ID`, then
// appends its one line to `changes.decided`. The data comes from the call's
// `workspace_changed` event, never from the tool's text. Without a kernel (a saved notebook)
// the row has no live buttons and names the `%agent` command instead; the text of every line
// matches view/changes.py.

import { append, h } from "./dom.js";

const VERBS = { added: "wrote", changed: "replaced", removed: "removed" };
const LABELS = { keep: "Keep", discard: "Discard", undo: "Undo" };
/** How long a click waits for the kernel's redraw before the row says how to decide without. */
const WAIT_MS = 4000;

function names(list, total) {
  const shown = (Array.isArray(list) ? list : []).map(String);
  const more = total - shown.length;
  return shown.join(", ") + (more > 0 ? ` and ${more} more` : "");
}

function done(ch, action) {
  const ok = (Array.isArray(ch.decided) ? ch.decided : []).filter((d) => d && d.ok);
  if (action === "undo") return ok.some((d) => d.action === "undo");
  return ok.some((d) => d.action === "keep" || d.action === "discard");
}

/** "held", or "kept" / "discarded" once a person decided (view/changes.py held_state). */
function heldState(ch) {
  for (const d of Array.isArray(ch.decided) ? ch.decided : []) {
    if (d && d.ok && d.action === "keep") return "kept";
    if (d && d.ok && d.action === "discard") return "discarded";
  }
  return "held";
}

/** The decisions still open (the same rule as view/changes.py open_actions). */
export function openActions(ch) {
  const out = [];
  if (Number(ch.held_count) > 0 && !done(ch, "keep")) out.push("keep", "discard");
  const applied = Number(ch.added || 0) + Number(ch.changed || 0) + Number(ch.removed || 0);
  if (applied > 0 && !done(ch, "undo")) out.push("undo");
  return out;
}

/** Draw the row of `item.changes`; `live`: buttons that send through `state.onAction`. */
export function renderChanges(state, item, live) {
  const ch = item.changes || {};
  const tool = ch.tool || "the command";
  const row = h("div", "ja-changes");
  row.dataset.recordId = String(ch.record_id || "");
  const counts = ["added", "changed", "removed"].filter((k) => Number(ch[k]) > 0);
  if (counts.length) {
    const total = counts.reduce((n, k) => n + Number(ch[k]), 0);
    const text =
      `${tool} changed the workspace: ${counts.map((k) => `${ch[k]} ${k}`).join(", ")} ` +
      `(${names(ch.names, total)})` + (done(ch, "undo") ? ", undone" : "");
    row.appendChild(h("div", "ja-changes-applied", text));
  }
  if (ch.undo_note) row.appendChild(h("div", "ja-changes-note", `Undo is partial: ${ch.undo_note}`));
  const held = Array.isArray(ch.held) ? ch.held : [];
  for (const e of held) {
    const line = h("div", "ja-changes-held");
    append(line, `${tool} ${VERBS[e.kind] || "changed"} `, h("code", "", String(e.path || "")),
      `, ${e.reason || ""}: ${heldState(ch)}`);
    row.appendChild(line);
  }
  const more = Number(ch.held_count || 0) - held.length;
  if (more > 0) row.appendChild(h("div", "ja-changes-held", `and ${more} more held change(s)`));
  for (const d of Array.isArray(ch.decided) ? ch.decided : []) {
    const cls = d && d.ok ? "ja-changes-done" : "ja-changes-refused";
    row.appendChild(h("div", cls, (d && d.ok ? "" : "refused: ") + String((d && d.message) || "")));
  }
  const acts = openActions(ch);
  if (!acts.length) return row;
  if (!live) {
    const rid = String(ch.record_id || "");
    row.appendChild(h("div", "ja-changes-how",
      `To decide, run in a new cell: ${acts.map((a) => `%agent ${a} ${rid}`).join(" or ")}`));
    return row;
  }
  const bar = h("div", "ja-changes-actions");
  const buttons = [];
  for (const a of acts) {
    const b = h("button", `ja-change-button ja-change-${a}`, LABELS[a]);
    b.type = "button";
    b.dataset.action = a;
    b.addEventListener("click", () => {
      // Disabled at once (a double click sends once); the kernel's answer redraws the row.
      for (const x of buttons) x.disabled = true;
      try {
        state.onAction({ type: "decide", call_id: item.call_id, action: a });
      } catch (err) {
        for (const x of buttons) x.disabled = false;
        return;
      }
      // The kernel's answer redraws the row (this one leaves the page). Still here: the click
      // waits behind a running cell, or no kernel holds this card (a reopened notebook whose
      // widget came back from the saved state): say what decides without one.
      setTimeout(() => {
        if (!row.isConnected || row.querySelector(".ja-changes-waiting")) return;
        row.appendChild(h("div", "ja-changes-waiting",
          "Waiting for the kernel (a running cell delays it). Without one, run " +
          `%agent ${a} ${String(ch.record_id || "")} in a new cell.`));
      }, WAIT_MS);
    });
    buttons.push(b);
    bar.appendChild(b);
  }
  row.appendChild(bar);
  return row;
}
