// The ask card: a question with 3–5 option buttons, an optional "Other" answer and Dismiss;
// or, for kind "approval", a tool approval with Allow once / Allow for this session / Deny.
//
// A click sends {type: "answer", call_id, how, option_index, answer} once: the card disables
// itself at once and remembers the call id in `state.sent`, so neither a double click nor a
// re-render before the kernel answers can send a second message.

import { append, h, prettyJson } from "./dom.js";

/** What a card says once its answer is sent (the kernel picks it up when it is idle). */
const SENT_TEXT = "Answer sent; waiting for the kernel…";

/** The options of an approval card when the payload gives none (the spec's order). */
export const APPROVAL_OPTIONS = ["Allow once", "Allow for this session", "Deny"];

function optionsOf(ask) {
  const options = Array.isArray(ask.options) ? ask.options : [];
  if (!options.length && ask.kind === "approval") return APPROVAL_OPTIONS.slice();
  return options;
}

function detailBlock(detail) {
  const box = h("div", "ja-approval-detail");
  const row = (label, value, pre) => {
    if (value === undefined || value === null || value === "") return;
    const text = pre ? prettyJson(value) : String(value);
    append(box, h("div", "ja-label", label), h(pre ? "pre" : "div", pre ? "ja-pre" : "", text));
  };
  const d = detail || {};
  row("Tool", d.tool ?? d.name);
  row("Command", d.command, true);
  row("Arguments", d.arguments ?? d.args, true);
  row("Working directory", d.cwd);
  for (const [key, value] of Object.entries(d)) {
    if (["tool", "name", "command", "arguments", "args", "cwd"].includes(key)) continue;
    row(key, typeof value === "string" ? value : JSON.stringify(value, null, 2), true);
  }
  return box;
}

function header(ask, text) {
  const kind = ask.kind === "approval" ? "Approval needed" : "Question";
  const head = h("div", "ja-ask-head");
  append(head, h("span", "ja-ask-kind", text || kind));
  return head;
}

function optionLabel(i, text, description) {
  const parts = [h("span", "ja-opt-num", `${i + 1}`), h("span", "ja-opt-text", text)];
  if (description) parts.push(h("span", "ja-opt-desc", description));
  return parts;
}

/**
 * Draw a pending ask. With `onAction` (live mode) the options are buttons; without it (a saved
 * notebook) they are listed, numbered, so the user can answer by number from a kernel.
 */
export function renderPendingAsk(state, ask, onAction) {
  const live = typeof onAction === "function";
  const card = h("section", `ja-ask ja-ask-pending ja-ask-${ask.kind || "ask"}`);
  card.dataset.callId = ask.call_id;
  card.appendChild(header(ask));
  card.appendChild(h("div", "ja-ask-question", ask.question));
  if (ask.kind === "approval") card.appendChild(detailBlock(ask.detail));

  const options = optionsOf(ask);
  const descriptions = Array.isArray(ask.descriptions) ? ask.descriptions : [];
  const sent = state.sent.get(ask.call_id);
  const controls = [];
  const statusLine = h("div", "ja-ask-status");

  const send = (msg, chosen) => {
    if (state.sent.has(ask.call_id)) return;
    state.sent.set(ask.call_id, msg);
    for (const c of controls) c.disabled = true;
    if (chosen) chosen.classList.add("ja-chosen");
    card.classList.add("ja-ask-sent");
    statusLine.textContent = SENT_TEXT;
    try {
      onAction(msg);
    } catch (err) {
      // Nothing was sent: let the user try again and say why.
      state.sent.delete(ask.call_id);
      for (const c of controls) c.disabled = false;
      if (chosen) chosen.classList.remove("ja-chosen");
      card.classList.remove("ja-ask-sent");
      statusLine.textContent = `Could not send the answer: ${err && err.message ? err.message : err}`;
    }
  };

  const list = h("div", "ja-options");
  options.forEach((text, i) => {
    const button = h("button", "ja-option");
    button.type = "button";
    button.dataset.index = String(i + 1);
    append(button, ...optionLabel(i, text, descriptions[i]));
    if (ask.kind === "approval" && i === options.length - 1) button.classList.add("ja-deny");
    if (!live) button.disabled = true;
    else {
      button.addEventListener("click", () =>
        send(
          { type: "answer", call_id: ask.call_id, how: "option", option_index: i + 1, answer: text },
          button,
        ),
      );
    }
    if (sent && sent.how === "option" && sent.option_index === i + 1) {
      button.classList.add("ja-chosen");
    }
    controls.push(button);
    list.appendChild(button);
  });
  card.appendChild(list);

  if (live && ask.allow_other) {
    const row = h("div", "ja-other");
    const input = h("input", "ja-other-input");
    input.type = "text";
    input.placeholder = "Other answer…";
    input.setAttribute("aria-label", "Other answer");
    input.dataset.focusKey = `other:${ask.call_id}`;
    input.value = state.other.get(ask.call_id) || "";
    const submit = h("button", "ja-other-submit", "Send");
    submit.type = "button";
    const sync = () => {
      submit.disabled = state.sent.has(ask.call_id) || input.value.trim() === "";
    };
    const go = () => {
      const answer = input.value.trim();
      if (!answer) return;
      send({ type: "answer", call_id: ask.call_id, how: "other", option_index: null, answer });
    };
    input.addEventListener("input", () => {
      state.other.set(ask.call_id, input.value);
      sync();
    });
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        go();
      }
    });
    submit.addEventListener("click", go);
    controls.push(input, submit);
    append(row, input, submit);
    card.appendChild(row);
    sync();
  }

  if (live && ask.kind !== "approval") {
    const dismiss = h("button", "ja-dismiss", "Dismiss");
    dismiss.type = "button";
    dismiss.addEventListener("click", () =>
      send({ type: "answer", call_id: ask.call_id, how: "dismissed", option_index: null, answer: "" }),
    );
    controls.push(dismiss);
    card.appendChild(dismiss);
  }

  if (sent) {
    for (const c of controls) c.disabled = true;
    card.classList.add("ja-ask-sent");
    statusLine.textContent = SENT_TEXT;
  } else if (!live) {
    statusLine.textContent = "Waiting for an answer.";
  }
  card.appendChild(statusLine);
  return card;
}

/** Draw an answered ask: its options with the chosen one marked, or the Other/dismissed answer. */
export function renderAnsweredAsk(ask) {
  const answered = ask.answered || {};
  const card = h("section", `ja-ask ja-ask-answered ja-ask-${ask.kind || "ask"}`);
  card.dataset.callId = ask.call_id;
  card.appendChild(header(ask, ask.kind === "approval" ? "Approval" : "Question"));
  card.appendChild(h("div", "ja-ask-question", ask.question));
  if (ask.kind === "approval") card.appendChild(detailBlock(ask.detail));
  const options = optionsOf(ask);
  const descriptions = Array.isArray(ask.descriptions) ? ask.descriptions : [];
  const list = h("div", "ja-options");
  options.forEach((text, i) => {
    const chosen = answered.how === "option" && answered.option_index === i + 1;
    const opt = h("div", `ja-option ja-option-static${chosen ? " ja-chosen" : ""}`);
    opt.dataset.index = String(i + 1);
    append(opt, ...optionLabel(i, text, descriptions[i]));
    if (chosen) opt.appendChild(h("span", "ja-chosen-mark", "✓ chosen"));
    list.appendChild(opt);
  });
  card.appendChild(list);
  if (answered.how === "other") {
    const line = h("div", "ja-ask-answer ja-chosen");
    append(line, h("span", "ja-answer-label", "Other: "), answered.answer || "");
    card.appendChild(line);
  } else if (answered.how === "dismissed") {
    card.appendChild(h("div", "ja-ask-answer ja-dismissed", "Dismissed without an answer"));
  }
  return card;
}
