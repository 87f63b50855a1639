// The ask card: a question with 3–5 option buttons, an optional "Other" answer and Dismiss;
// or, for kind "approval", a tool approval with Allow once / Allow for this session / Deny.
//
// A click sends {type: "answer", call_id, how, option_index, answer} once: the card disables
// itself at once and remembers the call id in `state.sent`, so neither a double click nor a
// re-render before the kernel answers can send a second message.
//
// Once answered, a card folds to one line ("✓ Allowed for this session: bash `grep …`",
// "✓ Which period? → Monthly figures") that opens on the full card.

import { codeBlock } from "./code.js";
import { append, argsSummary, clip, details, firstLine, h, prettyJson } from "./dom.js";
import { forgetRefused, markRecorded } from "./recorded.js";

/** What a card says once its answer is sent (the kernel picks it up when it is idle). */
const SENT_TEXT = "Answer sent; waiting for the kernel…";

/** What it says when the kernel has not taken the answer soon: a cell is running, and the
 * kernel reads a click only when that cell ends (runs never overlap). */
export const QUEUED_TEXT = "Answer queued behind the running cell; it applies when that cell ends.";
export const QUEUED_AFTER_MS = 400;

/** The options of an approval card when the payload gives none (the spec's order). */
export const APPROVAL_OPTIONS = ["Allow once", "Allow for this session", "Deny"];

/** What an approval's detail may name besides the arguments, in the order they are shown. */
const SUBJECTS = [
  ["command", "Command"],
  ["path", "Path"],
  ["url", "URL"],
  ["code", "Code"],
];

/** Detail keys drawn by name; any other key is listed after them. */
const KNOWN_DETAIL = new Set([
  "tool",
  "name",
  "arguments",
  "args",
  "cwd",
  "display",
  ...SUBJECTS.map(([key]) => key),
]);

function optionsOf(ask) {
  const options = Array.isArray(ask.options) ? ask.options : [];
  if (!options.length && ask.kind === "approval") return APPROVAL_OPTIONS.slice();
  return options;
}

function parsed(value) {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/**
 * The arguments left to show once the subject rows are drawn: a key whose value a subject row
 * already shows is not repeated (the "Command" row and `{"command": …}` say the same thing).
 */
function remainingArguments(args, shown) {
  const value = parsed(args);
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const rest = Object.fromEntries(
      Object.entries(value).filter(([k, v]) => !(shown.has(k) && shown.get(k) === v)),
    );
    return Object.keys(rest).length ? rest : null;
  }
  if (value === null || value === undefined || value === "") return null;
  return [...shown.values()].includes(value) ? null : value;
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
  const shown = new Map();
  // The tool's display hints ({"code": "python"}): that subject is shown highlighted.
  const langs = d.display && typeof d.display === "object" ? d.display : {};
  for (const [key, label] of SUBJECTS) {
    if (typeof d[key] === "string" && d[key] && typeof langs[key] === "string") {
      append(box, h("div", "ja-label", label), codeBlock(d[key], langs[key]));
      shown.set(key, d[key]);
    } else if (typeof d[key] === "string" && d[key]) {
      row(label, d[key], true);
      shown.set(key, d[key]);
    }
  }
  row("Arguments", remainingArguments(d.arguments ?? d.args, shown), true);
  row("Working directory", d.cwd);
  for (const [key, value] of Object.entries(d)) {
    if (KNOWN_DETAIL.has(key)) continue;
    row(key, typeof value === "string" ? value : JSON.stringify(value, null, 2), true);
  }
  return box;
}

/** What an approval is about, in one line: its command, path, URL or code, else its arguments. */
function subjectLine(detail) {
  const d = detail || {};
  for (const [key] of SUBJECTS) {
    if (typeof d[key] === "string" && d[key].trim()) return clip(firstLine(d[key]), 80);
  }
  const args = d.arguments ?? d.args;
  return args === undefined || args === null ? "" : argsSummary(args, 80);
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
  const refusal = live ? forgetRefused(state, ask) : null;
  const sent = state.sent.get(ask.call_id);
  const controls = [];
  const statusLine = h("div", "ja-ask-status");
  // The card may be drawn again between a click and the queued notice below: the notice goes
  // to every status line of this question still on the page, not to one already replaced.
  statusLine.dataset.callId = String(ask.call_id);

  const send = (msg, chosen) => {
    if (state.sent.has(ask.call_id)) return;
    state.sent.set(ask.call_id, msg);
    for (const c of controls) c.disabled = true;
    if (chosen) chosen.classList.add("ja-chosen");
    card.classList.add("ja-ask-sent");
    statusLine.textContent = SENT_TEXT;
    // An idle kernel answers within a moment (the card is redrawn answered); still here, the
    // click waits behind a running cell: say so rather than look stuck.
    setTimeout(() => {
      if (state.sent.has(ask.call_id)) (state.queued = state.queued || new Set()).add(ask.call_id);
      const lines = new Set([statusLine]);
      for (const line of document.querySelectorAll(".ja-ask-status")) {
        if (line.dataset.callId === String(ask.call_id)) lines.add(line);
      }
      for (const line of lines) {
        if (line.isConnected && line.textContent === SENT_TEXT) line.textContent = QUEUED_TEXT;
      }
    }, QUEUED_AFTER_MS);
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
  markRecorded(card, list, ask, options.length);

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
    statusLine.textContent = state.queued && state.queued.has(ask.call_id) ? QUEUED_TEXT : SENT_TEXT;
  } else if (refusal) {
    // A replay's refusal repeats the line under the buttons ("This recording answered option
    // 2…"): that line is marked instead of saying it twice.
    const recordedLine = card.querySelector(".ja-recorded-line");
    if (recordedLine && refusal.startsWith("This recording answered")) {
      recordedLine.classList.add("ja-ask-refused");
    } else {
      statusLine.classList.add("ja-ask-refused");
      statusLine.textContent = refusal;
    }
  } else if (!live) {
    statusLine.textContent = "Waiting for an answer.";
  }
  card.appendChild(statusLine);
  return card;
}

/** The verdict of an answered approval: [tone, words]. A dismissal or typed text denies. */
function approvalVerdict(ask, answered) {
  if (answered.how !== "option") return ["deny", "Denied"];
  const label = String(answered.answer || optionsOf(ask)[(answered.option_index || 0) - 1] || "");
  const known = {
    "allow once": ["allow", "Allowed once"],
    "allow for this session": ["allow", "Allowed for this session"],
    deny: ["deny", "Denied"],
  }[label.trim().toLowerCase()];
  return known || ["allow", `Answered "${label}"`];
}

const TONE_ICONS = { allow: "✓", deny: "✕", dismissed: "–" };

/**
 * The one line an answered ask folds to. Inline parts with spaces between them, so the line
 * reads (and copies) as one sentence: "✓ Allowed for this session: bash grep -c '' *.csv".
 */
function foldedLine(ask, answered) {
  let tone;
  const parts = [];
  if (ask.kind === "approval") {
    const [t, words] = approvalVerdict(ask, answered);
    tone = t;
    const d = ask.detail || {};
    const subject = subjectLine(d);
    parts.push(h("span", "ja-ask-verdict", `${words}:`));
    parts.push(h("span", "ja-ask-tool", d.tool ?? d.name ?? "tool"));
    if (subject) parts.push(h("code", "ja-ask-subject", subject));
  } else {
    tone = answered.how === "dismissed" ? "dismissed" : "allow";
    // Short enough that the answer after it stays in view.
    parts.push(h("span", "ja-ask-verdict", clip(firstLine(ask.question) || "Question", 60)));
    parts.push(h("span", "ja-ask-arrow", "→"));
    const answer =
      answered.how === "dismissed" ? "dismissed" : clip(firstLine(answered.answer || ""), 80);
    parts.push(h("span", `ja-ask-given${answered.how === "dismissed" ? " ja-dim" : ""}`, answer));
  }
  const line = [h("span", `ja-ask-icon ja-tone-${tone}`, TONE_ICONS[tone])];
  for (const part of parts) line.push(" ", part);
  return line;
}

/**
 * Draw an answered ask, folded to one line; opened, it shows the question, the detail and the
 * options with the chosen one marked (or the Other/dismissed answer).
 */
export function renderAnsweredAsk(state, key, ask) {
  const answered = ask.answered || {};
  const card = details(
    state,
    key,
    `ja-ask ja-ask-answered ja-ask-${ask.kind || "ask"}`,
    foldedLine(ask, answered),
    false,
  );
  card.dataset.callId = ask.call_id;
  card.dataset.how = answered.how || "";
  const body = h("div", "ja-ask-body");
  body.appendChild(h("div", "ja-ask-question", ask.question));
  if (ask.kind === "approval") body.appendChild(detailBlock(ask.detail));
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
  body.appendChild(list);
  if (answered.how === "other") {
    const line = h("div", "ja-ask-answer ja-chosen");
    append(line, h("span", "ja-answer-label", "Other: "), answered.answer || "");
    body.appendChild(line);
  } else if (answered.how === "dismissed") {
    body.appendChild(h("div", "ja-ask-answer ja-dismissed", "Dismissed without an answer"));
  }
  card.appendChild(body);
  return card;
}
