// A card can outlive its kernel: after a restart its comm is dead and nothing the new kernel
// sends reaches it (JupyterLab applies a display update only to the cell whose execution sent
// it). When another card on the page shows the same run ended (answered with `%agent resume`
// in the new kernel, superseded, finished), that view is the run's final state: every card of
// the run still drawn waiting or running shows it too, under one line saying it ended in
// another cell (docs/behaviour.md §1.3).
//
// The live widget's module (anywidget's _esm) and the JupyterLab extension's bundle are two
// copies of this file on one page, so the registry lives on `globalThis`, and each card keeps
// its own redraw function.

const KEY = Symbol.for("jupyter-agent.cardsByRun");
const OPEN = new Set(["running", "ask"]);

function registry() {
  if (!globalThis[KEY]) {
    // cards: run_id -> Set<WeakRef<el>>; ended: run_id -> final view; redraw: el -> () => void
    globalThis[KEY] = { cards: new Map(), ended: new Map(), redraw: new WeakMap() };
  }
  return globalThis[KEY];
}

function isEnded(view) {
  return Boolean(view && view.run_id && view.status && !OPEN.has(view.status));
}

/**
 * Note that `el` draws `view` (`redraw` draws it again) and return what to draw: the run's
 * final view when another card showed it ended while `view` still waits, else null.
 */
export function trackCard(el, view, redraw) {
  const runId = view && view.run_id;
  if (!runId) return null;
  const reg = registry();
  reg.redraw.set(el, redraw);
  let refs = reg.cards.get(runId);
  if (!refs) reg.cards.set(runId, (refs = new Set()));
  let known = false;
  for (const ref of refs) {
    const other = ref.deref();
    if (!other) refs.delete(ref);
    else if (other === el) known = true;
  }
  if (!known) refs.add(new WeakRef(el));
  if (isEnded(view)) {
    const first = !reg.ended.has(runId);
    reg.ended.set(runId, view);
    if (first) {
      for (const ref of refs) {
        const other = ref.deref();
        const again = other && other !== el ? reg.redraw.get(other) : null;
        if (again) again();
      }
    }
    return null;
  }
  return reg.ended.get(runId) || null;
}

/** The line drawn above a card that shows the end of its run reached in another cell. */
export function renderEndedElsewhere() {
  const line = document.createElement("div");
  line.className = "ja-ended-elsewhere";
  line.setAttribute("role", "status");
  line.textContent =
    "This run went on in another cell (a new kernel) and ended there; shown here as it ended.";
  return line;
}
