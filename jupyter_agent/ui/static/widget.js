// The anywidget front end of a run: draws the widget's one synced trait, `view`, and sends the
// user's clicks back as custom messages ({type: "answer", call_id, how, option_index, answer}).
//
// The Python side ships this module as `_esm`; anywidget loads it from a blob URL, where
// relative imports do not resolve, so the Python side inlines ./render.js and its imports
// into one module before sending it.

import { renderRunInto } from "./render.js";

export default {
  /** Draw the run into `el` and keep it current; return the cleanup anywidget calls. */
  render({ model, el }) {
    el.classList.add("ja-widget");
    const opts = { onAction: (msg) => model.send(msg) };
    const draw = () => renderRunInto(el, model.get("view"), opts);
    // A streaming run changes `view` many times a second: draw at most once per frame.
    let frame = 0;
    const schedule = () => {
      if (!frame) {
        frame = requestAnimationFrame(() => {
          frame = 0;
          draw();
        });
      }
    };
    model.on("change:view", schedule);
    draw();
    return () => {
      model.off("change:view", schedule);
      if (frame) cancelAnimationFrame(frame);
      frame = 0;
    };
  },
};
