// A waiting card in replay mode: the recording answered it with one option (`ask.recorded_option`,
// set by the kernel: agents/resume.py mark_recorded). That button is marked "▶ recorded", and one
// line under the buttons says the others have no recorded continuation. A click the kernel
// refused while the question still waits (`ask.refused`, magics._on_click) is said in the card's
// status line, and the card takes a click again: the "Answer sent" state is dropped, once per
// refusal (`seq`), so a re-render never forgets a newer click.

import { append, h } from "./dom.js";

/** Drop the "sent" state of `ask`'s card when the kernel refused that answer (once per refusal). */
export function forgetRefused(state, ask) {
  const refused = ask && ask.refused;
  if (!refused || typeof refused !== "object") return null;
  state.refusals = state.refusals || new Map();
  if (state.refusals.get(ask.call_id) !== refused.seq) {
    state.refusals.set(ask.call_id, refused.seq);
    state.sent.delete(ask.call_id);
    if (state.queued) state.queued.delete(ask.call_id);
  }
  // Plain text, backticks dropped (the kernel's wording, like the hint line).
  return state.sent.has(ask.call_id) ? null : String(refused.message || "").replace(/`/g, "");
}

/** The recorded option of `ask` (1-based) when it names one of `n` options, else 0. */
export function recordedOption(ask, n) {
  const k = ask && ask.recorded_option;
  return Number.isInteger(k) && k >= 1 && k <= n ? k : 0;
}

/** Mark the recorded option's button in `list` and add the one line after it to `card`. */
export function markRecorded(card, list, ask, n) {
  const k = recordedOption(ask, n);
  if (!k) return;
  card.classList.add("ja-ask-replay");
  const button = list.querySelector(`.ja-option[data-index="${k}"]`);
  if (button) {
    button.classList.add("ja-recorded");
    button.appendChild(h("span", "ja-recorded-mark", "▶ recorded"));
  }
  const line = h("div", "ja-recorded-line");
  append(
    line,
    `This recording answered option ${k}: click it, or go live (`,
    h("code", null, "%agent live"),
    ") and re-run the cell.",
  );
  card.appendChild(line);
}
