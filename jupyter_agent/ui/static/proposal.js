// A cell the agent proposed (insert_cell), on its tool card: the code, highlighted, with
// "Insert below" and "Discard".
//
// "Insert below" dispatches the DOM event `jupyter-agent-insert-cell` (bubbling, cancelable,
// detail {id, source, kind}) from the card. The JupyterLab / Notebook 7 extension
// (labextension/src/insert.ts) inserts the cell below the output's cell and cancels the event
// to say so. When nobody cancels it (the widget without the extension: VS Code, Colab...) the
// source is copied to the clipboard instead and the card says so. Either way the notebook is
// changed only by the user's click; the kernel is not involved. The choice is remembered in the
// render state, so a redraw does not offer the buttons again.

import { append, copyText, h } from "./dom.js";
import { codeBlock } from "./code.js";

/** The DOM event the extension listens for. */
export const INSERT_EVENT = "jupyter-agent-insert-cell";

function decided(state) {
  if (!state.proposals) state.proposals = new Map();
  return state.proposals;
}

/** What happened to proposal `id` in this view: "inserted", "copied", "discarded" or "". */
export function proposalChoice(state, id) {
  return decided(state).get(id) || "";
}

const DONE_TEXT = {
  inserted: "Inserted below.",
  copied: "No notebook extension here: the cell's code was copied to the clipboard; paste it into a new cell.",
  "copy-failed": "No notebook extension here and the clipboard is not available: copy the code above.",
  discarded: "Discarded.",
};

/**
 * The proposal block for `proposal` ({id, source, kind, explanation}), with its buttons in a
 * live card and in a saved output alike: inserting needs the front end, not the kernel.
 */
export function renderProposal(state, proposal) {
  const box = h("div", "ja-proposal");
  box.dataset.proposalId = proposal.id || "";
  const kind = proposal.kind === "markdown" ? "markdown" : "code";
  append(box, h("div", "ja-label", `Proposed ${kind} cell`));
  if (proposal.explanation) box.appendChild(h("div", "ja-proposal-why", proposal.explanation));
  box.appendChild(codeBlock(proposal.source, kind === "code" ? "python" : ""));
  const bar = h("div", "ja-proposal-actions");
  box.appendChild(bar);
  const show = (choice) => {
    bar.textContent = "";
    bar.appendChild(h("span", "ja-dim ja-proposal-done", DONE_TEXT[choice] || choice));
    box.dataset.choice = choice;
  };
  const earlier = proposalChoice(state, proposal.id);
  if (earlier) {
    show(earlier);
    return box;
  }
  const insert = h("button", "ja-btn ja-primary ja-insert", "Insert below");
  const discard = h("button", "ja-btn ja-discard", "Discard");
  insert.type = discard.type = "button";
  const choose = (choice) => {
    decided(state).set(proposal.id, choice);
    show(choice);
  };
  insert.addEventListener("click", async (event) => {
    event.preventDefault();
    event.stopPropagation();
    if (proposalChoice(state, proposal.id)) return; // a double click inserts once
    insert.disabled = discard.disabled = true;
    const detail = { id: proposal.id, source: proposal.source, kind };
    const ev = new CustomEvent(INSERT_EVENT, { bubbles: true, cancelable: true, detail });
    const unhandled = box.dispatchEvent(ev);
    if (!unhandled) return choose("inserted");
    choose((await copyText(proposal.source)) ? "copied" : "copy-failed");
  });
  discard.addEventListener("click", (event) => {
    event.preventDefault();
    event.stopPropagation();
    if (!proposalChoice(state, proposal.id)) choose("discarded");
  });
  append(bar, insert, discard);
  return box;
}

/** The figures a run_python call drew: images from base64 PNG, each with its description. */
export function renderFigures(figures) {
  const box = h("div", "ja-figures");
  for (const fig of figures || []) {
    const one = h("figure", "ja-figure");
    if (typeof fig.png === "string" && /^[A-Za-z0-9+/=]+$/.test(fig.png)) {
      const img = h("img", "ja-figure-img");
      img.src = `data:image/png;base64,${fig.png}`;
      img.alt = fig.description || "figure";
      one.appendChild(img);
    }
    one.appendChild(h("figcaption", "ja-dim", fig.description || ""));
    box.appendChild(one);
  }
  return box;
}
