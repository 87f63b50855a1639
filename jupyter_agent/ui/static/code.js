// Code shown highlighted: a tiny Python tokenizer, no dependency, DOM text nodes only (code
// is never parsed as HTML). Used where a tool's `display` hint names a language
// ({"code": "python"} on run_python, {"source": "python"} on insert_cell), for the approval
// card and the proposed cell. Other languages are shown plain.

import { h } from "./dom.js";

const KEYWORDS = new Set(
  ("False None True and as assert async await break class continue def del elif else except " +
    "finally for from global if import in is lambda match nonlocal not or pass raise return " +
    "try while with yield case")
    .split(" "),
);
const BUILTINS = new Set(
  ("print len range dict list set tuple str int float bool sum min max sorted enumerate zip " +
    "map filter open isinstance type abs round any all super")
    .split(" "),
);

// One alternation, tried at each position: comment, string (triple, then single-line; with
// prefixes), number, word, anything else one character at a time.
const TOKEN = new RegExp(
  [
    "(#[^\\n]*)",
    "((?:[rRbBuUfF]{1,2})?(?:\"\"\"[\\s\\S]*?(?:\"\"\"|$)|'''[\\s\\S]*?(?:'''|$)|" +
      "\"(?:\\\\.|[^\"\\\\\\n])*\"?|'(?:\\\\.|[^'\\\\\\n])*'?))",
    "(\\b\\d[\\d_]*(?:\\.\\d*)?(?:[eE][+-]?\\d+)?j?\\b)",
    "([A-Za-z_]\\w*)",
    "(\\s+|[^\\sA-Za-z_\\d#'\"]+|.)",
  ].join("|"),
  "gy",
);

/** The tokens of Python `source` as [className|null, text] pairs (their texts join to it). */
export function pythonTokens(source) {
  const out = [];
  const text = String(source ?? "");
  TOKEN.lastIndex = 0;
  let m;
  let afterDef = false;
  while (TOKEN.lastIndex < text.length && (m = TOKEN.exec(text)) !== null) {
    let cls = null;
    if (m[1] !== undefined) cls = "ja-c-comment";
    else if (m[2] !== undefined) cls = "ja-c-string";
    else if (m[3] !== undefined) cls = "ja-c-number";
    else if (m[4] !== undefined) {
      if (KEYWORDS.has(m[4])) cls = "ja-c-keyword";
      else if (afterDef) cls = "ja-c-def";
      else if (BUILTINS.has(m[4])) cls = "ja-c-builtin";
      afterDef = m[4] === "def" || m[4] === "class";
    } else if (m[5] !== undefined && !/^\s+$/.test(m[5])) afterDef = false;
    out.push([cls, m[0]]);
  }
  return out;
}

/** A <pre> holding `source`, highlighted when `lang` is "python"; plain text otherwise. */
export function codeBlock(source, lang, className = "ja-pre ja-code") {
  const pre = h("pre", className);
  const code = h("code", lang ? `language-${lang}` : "");
  if (lang === "python") {
    for (const [cls, text] of pythonTokens(source)) {
      code.appendChild(cls ? h("span", cls, text) : document.createTextNode(text));
    }
  } else code.textContent = String(source ?? "");
  pre.appendChild(code);
  return pre;
}
