// The anywidget front end of a run: draws the run's view, kept current by the kernel's
// snapshots and patches (./patch.js), and sends the user's clicks back as custom messages.
//
// Messages to the kernel (`model.send`):
//
//   {type: "answer", call_id, how, option_index, answer}
//       An ask or approval card was answered: `how` is "option" (`option_index` 1-based, with
//       the option's text as `answer`), "other" (the typed `answer`) or "dismissed". Sent once
//       per card.
//   {type: "decide", call_id, action}
//       Keep, Discard or Undo on the change row of a sandboxed command's call (./changes.js);
//       the kernel decides through the same function as `%agent keep|discard|undo ID`.
//   {type: "sync", seq}
//       The view missed a patch (./patch.js): the kernel answers with a new snapshot when the
//       view changed, then {type: "synced", seq}.
//   {type: "stop", run_id}
//       The user pressed the stop button of the running run `run_id` (the view's run_id). It
//       asks for what a kernel interrupt does: the run ends as "aborted", keeping what it did so
//       far. The kernel may get it late (a busy kernel reads widget messages once the cell
//       ends), so a stop for a run that is no longer running must be ignored. The button sends
//       it once; it can be pressed again only if the run still runs several seconds later.
//
// A send that throws means the comm is dead (the kernel was restarted or shut down): the card
// is then drawn static under a line giving the `%agent resume` command for the click
// (kernel_gone.js), and nothing more is sent. (A sync sent on every render was tried: it made
// a card whose click waits behind a running cell be drawn again and again; not done.)
//
// Because of that delay, the stop also goes out as a DOM event, `jupyter-agent-stop` (bubbling,
// detail {run_id}), from the widget's element: the JupyterLab extension catches it and
// interrupts the kernel when the run is the one it is busy with.
//
// The Python side does not ship this module as each card's `_esm`: ./cards.js puts it with the
// batch card into the one shared module every card loads, bundled by the npm build
// (./loader.js explains how).

import { renderKernelGone } from "./kernel_gone.js";
import { subscribe, viewState } from "./patch.js";
import { disposeRun, renderRunInto } from "./render.js";

/** The DOM event a stop click also dispatches (labextension/src/stop.ts listens for it). */
const STOP_EVENT = "jupyter-agent-stop";

/** The run card: what anywidget calls for each run widget (through ./loader.js). */
export const RUN_CARD = {
  /** Follow the kernel's patches from the model's creation on, before any view is drawn. */
  initialize({ model }) {
    viewState(model);
  },

  /** Draw the run into `el` and keep it current; return the cleanup anywidget calls. */
  render({ model, el }) {
    el.classList.add("ja-widget");
    // Set once a send fails: the comm is dead (kernel restarted). From then on the card is
    // drawn static, under a line with the command that answers it from a new cell.
    let gone = null;
    const onAction = (msg) => {
      if (gone) return;
      if (msg && msg.type === "stop") {
        const detail = { run_id: msg.run_id };
        el.dispatchEvent(new CustomEvent(STOP_EVENT, { bubbles: true, detail }));
      }
      try {
        model.send(msg);
      } catch (err) {
        gone = { msg };
        // Drawn afresh: what the live card remembered ("sent") never reached a kernel.
        queueMicrotask(() => {
          disposeRun(el);
          el.replaceChildren();
          draw();
        });
      }
    };
    const opts = { onAction };
    const draw = () => {
      const view = viewState(model).view;
      if (!gone) return renderRunInto(el, view, opts);
      renderRunInto(el, view, undefined);
      const root = el.firstElementChild || el;
      // The run ended in another cell (./elsewhere.js): nothing is left to answer.
      if (root.querySelector(":scope > .ja-ended-elsewhere")) return;
      const old = root.querySelector(":scope > .ja-kernel-gone");
      if (old) old.remove();
      root.insertBefore(renderKernelGone(view, gone.msg), root.firstChild);
    };
    // A streaming run changes the view many times a second: draw at most once per frame.
    let frame = 0;
    const schedule = () => {
      if (!frame) {
        frame = requestAnimationFrame(() => {
          frame = 0;
          draw();
        });
      }
    };
    const unsubscribe = subscribe(model, schedule);
    draw();
    return () => {
      unsubscribe();
      if (frame) cancelAnimationFrame(frame);
      frame = 0;
      disposeRun(el);
    };
  },
};

export default RUN_CARD;
