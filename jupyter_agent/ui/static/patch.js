// The live widget's copy of a run's view, kept current by patches from the kernel.
//
// The kernel (jupyter_agent/ui/widget.py) sends a snapshot, the traits `view` and `view_seq`,
// rarely (widget opened, run paused or ended, on request), and between snapshots custom
// messages {type: "patch", seq, ops} with only what changed (jupyter_agent/view/diff.py
// describes the ops). Patches apply in seq order on top of the snapshot: a patch at or below the
// current seq is already included and ignored; a gap (a patch lost, or a snapshot older than the
// patches) makes the view ask once for a new snapshot, {type: "sync", seq}, and wait for it.
//
//   viewState(model)        the model's state {view, seq, waiting}; made on first use and
//                           kept per model, so every view of the widget shares one copy
//   subscribe(model, fn)    call fn() after each change of the state; returns the unsubscribe
//   applyOps(view, ops)     apply one patch's ops to a view dict in place (returns it)
//
// The state hangs on the model under a global symbol, not in a module-level map: the widget
// module can be loaded more than once per page (anywidget may import it again for a new view),
// and two copies each following the same model's messages would apply every patch twice.
// applyOps also copies what it takes from a message, so no two views ever share an object.
//
// The kernel answers every sync with {type: "synced", seq}, after the snapshot if the view
// changed: a wait for a gap ends even when no snapshot had to be sent.

const STATE_KEY = Symbol.for("jupyter-agent.viewState");

function clone(value) {
  return value === undefined || value === null ? {} : JSON.parse(JSON.stringify(value));
}

/** Apply `ops` (see jupyter_agent/view/diff.py) to `view` in place. Unknown ops are skipped. */
export function applyOps(view, ops) {
  if (!Array.isArray(view.items)) view.items = [];
  for (const op of ops || []) {
    if (!op || typeof op !== "object") continue;
    switch (op.op) {
      case "truncate":
        view.items.length = Math.min(view.items.length, Math.max(0, op.length | 0));
        break;
      case "push":
        view.items.push(clone(op.item));
        break;
      case "update": {
        const item = view.items[op.index];
        if (!item) break;
        Object.assign(item, clone(op.set));
        for (const [key, text] of Object.entries(op.append || {})) {
          item[key] = (typeof item[key] === "string" ? item[key] : "") + text;
        }
        for (const key of op.delete || []) delete item[key];
        break;
      }
      case "set":
        view[op.key] = op.value === null || typeof op.value !== "object" ? op.value
          : clone(op.value);
        break;
      case "delete":
        delete view[op.key];
        break;
      case "merge":
        view[op.key] = Object.assign(
          view[op.key] && typeof view[op.key] === "object" ? view[op.key] : {},
          clone(op.value),
        );
        break;
      default:
        break;
    }
  }
  return view;
}

/** The model's patched view state (made, and hooked to the model, on first use). */
export function viewState(model) {
  let state = model[STATE_KEY];
  if (state) return state;
  state = { view: clone(model.get("view")), seq: model.get("view_seq") || 0, waiting: false,
            listeners: new Set() };
  Object.defineProperty(model, STATE_KEY, { value: state, configurable: true });
  const notify = () => {
    for (const fn of [...state.listeners]) fn();
  };
  const onSnapshot = () => {
    state.view = clone(model.get("view"));
    state.seq = model.get("view_seq") || 0;
    state.waiting = false;
    notify();
  };
  const onMessage = (msg) => {
    if (msg && msg.type === "synced") {
      // Any snapshot came first (same comm, in order): the view is the kernel's now.
      state.waiting = false;
      const seq = model.get("view_seq") || 0;
      if (typeof msg.seq === "number" && msg.seq > state.seq && seq >= msg.seq) {
        state.view = clone(model.get("view")); // the model holds it; no change event came
        state.seq = seq;
      }
      notify();
      return;
    }
    if (!msg || msg.type !== "patch" || typeof msg.seq !== "number") return;
    if (msg.seq <= state.seq) return; // already in the snapshot
    if (msg.seq !== state.seq + 1 || state.waiting) {
      if (!state.waiting) {
        state.waiting = true;
        model.send({ type: "sync", seq: state.seq });
      }
      return;
    }
    applyOps(state.view, msg.ops);
    state.seq = msg.seq;
    notify();
  };
  model.on("change:view", onSnapshot);
  model.on("change:view_seq", onSnapshot);
  model.on("msg:custom", onMessage);
  return state;
}

/** Call `fn` after every change of the model's view state; returns the unsubscribe. */
export function subscribe(model, fn) {
  const state = viewState(model);
  state.listeners.add(fn);
  return () => state.listeners.delete(fn);
}
