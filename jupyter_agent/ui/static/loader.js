// A card's whole `_esm`: it runs the cards' shared module (./cards.js, bundled into one module,
// ./bundle/cards.js, by the npm build) instead of carrying a copy of it
// (jupyter_agent/ui/shared.py).
//
// The kernel keeps that module and every card's CSS in one widget model, the card's
// `_code_model`: its `code` trait is {js, css} as JSON, gzipped, in base64 (a saved notebook
// keeps it once, small). This module unpacks it once per page (the browser's
// DecompressionStream), adds the CSS to the page, imports the JavaScript from a blob URL (as
// anywidget does with `_esm`) and hands the card to its `_card` entry ("run" or "batch"). The
// import is shared through a global keyed by the code model's id: twenty cards cost one
// import, and a new kernel (a new code model) brings its own version of the code.
//
// Only anywidget's model API and its `widget_manager.get_model` are used: it works wherever
// anywidget does (JupyterLab, Notebook 7, VS Code).
// The kernel ships this file without its comment lines.

const MODULES = Symbol.for("jupyter-agent.cards");
const STYLE_ID = "jupyter-agent-cards-style";

async function unpack(packed) {
  const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
  const text = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(text).text());
}

function cards(model) {
  const id = model.get("_code_model");
  const modules = globalThis[MODULES] || (globalThis[MODULES] = new Map());
  let loading = modules.get(id);
  if (!loading) {
    loading = model.widget_manager.get_model(id).then(async (code) => {
      const { js, css } = await unpack(code.get("code"));
      let style = document.getElementById(STYLE_ID);
      if (!style) {
        style = Object.assign(document.createElement("style"), { id: STYLE_ID });
        document.head.appendChild(style);
      }
      style.textContent = css;
      const url = URL.createObjectURL(new Blob([js], { type: "text/javascript" }));
      try {
        return (await import(/* webpackIgnore: true */ url)).default;
      } finally {
        URL.revokeObjectURL(url);
      }
    });
    modules.set(id, loading);
    loading.catch(() => modules.delete(id)); // a later card may try again
  }
  return loading;
}

let card = null;

export default {
  async initialize({ model }) {
    card = (await cards(model))[model.get("_card")];
    if (!card) throw new Error(`[jupyter-agent] unknown card ${model.get("_card")}`);
    return card.initialize ? card.initialize({ model }) : undefined;
  },
  render(props) {
    return card.render(props);
  },
};
