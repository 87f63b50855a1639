// A tiny, safe markdown renderer for model output.
//
// Model text is untrusted: every character of it is HTML-escaped before any markdown rule
// runs, so the only tags in the result are the ones this file writes. Links are emitted only
// for http(s) URLs. Supported: paragraphs, ATX headings, fenced code, inline code, bold,
// italic, strikethrough, bullet/numbered lists (nested by indentation), block quotes,
// horizontal rules, pipe tables and links. Anything else stays as (escaped) text.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escape the five HTML-significant characters of `text`. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

// Placeholders keep inline code and links away from the emphasis rules. The markers are
// private-use characters, which we strip from the input first so a model cannot forge them.
const PH_OPEN = "\uE000";
const PH_CLOSE = "\uE001";
const PH_RE = /\uE000(\d+)\uE001/g;

const URL_RE = /^https?:\/\/[^\s<>"']+$/i;

function renderInline(escaped) {
  const slots = [];
  const hold = (html) => `${PH_OPEN}${slots.push(html) - 1}${PH_CLOSE}`;
  let s = escaped;
  // Inline code first: nothing inside it is markdown.
  s = s.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (_, _ticks, code) =>
    hold(`<code>${code.trim() === "" ? code : code.replace(/^ (.*) $/, "$1")}</code>`),
  );
  // Links whose target is an http(s) URL; anything else is left as text.
  s = s.replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, (whole, label, href) => {
    const url = href.replace(/&amp;/g, "&");
    if (!URL_RE.test(url)) return whole;
    return hold(
      `<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${label}</a>`,
    );
  });
  // Bare URLs (after escaping, a URL cannot contain < > " ' so the class below is safe).
  s = s.replace(/\bhttps?:\/\/[^\s<>&]*(?:&amp;[^\s<>&]*)*[^\s<>&.,;:!?)\]'"]/gi, (url) => {
    const raw = url.replace(/&amp;/g, "&");
    return hold(
      `<a href="${escapeHtml(raw)}" target="_blank" rel="noopener noreferrer">${url}</a>`,
    );
  });
  s = s.replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>");
  s = s.replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>");
  s = s.replace(/(^|[^*\w])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?!\*)/g, "$1<em>$2</em>");
  s = s.replace(/(^|[^\w])_(?=[^\s_])([^_\n]*?[^\s_])_(?!\w)/g, "$1<em>$2</em>");
  s = s.replace(/~~(?=\S)([^~\n]*?\S)~~/g, "<del>$1</del>");
  // Restore held pieces; a held link label may itself hold code, so loop until stable.
  let prev;
  do {
    prev = s;
    s = s.replace(PH_RE, (_, i) => slots[Number(i)]);
  } while (s !== prev);
  return s;
}

const FENCE_RE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING_RE = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const HR_RE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const LIST_RE = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const QUOTE_RE = /^ {0,3}&gt;\s?(.*)$/;
const TABLE_SEP_RE = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

function splitRow(line) {
  let t = line.trim();
  if (t.startsWith("|")) t = t.slice(1);
  if (t.endsWith("|") && !t.endsWith("\\|")) t = t.slice(0, -1);
  return t.split(/(?<!\\)\|/).map((c) => c.trim());
}

function isBlockStart(line, next) {
  return (
    FENCE_RE.test(line) ||
    HEADING_RE.test(line) ||
    HR_RE.test(line) ||
    LIST_RE.test(line) ||
    QUOTE_RE.test(line) ||
    (line.includes("|") && next !== undefined && TABLE_SEP_RE.test(next) && next.includes("-"))
  );
}

function renderList(lines, start) {
  // Collect the lines of one list (items, their continuation lines, nested items).
  const first = LIST_RE.exec(lines[start]);
  const baseIndent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const items = [];
  let i = start;
  while (i < lines.length) {
    const line = lines[i];
    const m = LIST_RE.exec(line);
    if (m && m[1].length === baseIndent && /\d/.test(m[2]) === ordered) {
      items.push({ first: m[3], rest: [], num: parseInt(m[2], 10) });
      i += 1;
      continue;
    }
    if (line.trim() === "") {
      // A blank line ends the list unless an indented line or another item follows.
      const next = lines[i + 1];
      if (next === undefined) break;
      const nm = LIST_RE.exec(next);
      const nextIndent = /^\s*/.exec(next)[0].length;
      const continues =
        (nm && nm[1].length >= baseIndent) || (next.trim() !== "" && nextIndent > baseIndent);
      if (!continues || (nm && nm[1].length === baseIndent && /\d/.test(nm[2]) !== ordered)) {
        break;
      }
      items[items.length - 1].rest.push("");
      i += 1;
      continue;
    }
    const indent = /^\s*/.exec(line)[0].length;
    if (indent > baseIndent) {
      items[items.length - 1].rest.push(line.slice(Math.min(indent, baseIndent + 2)));
      i += 1;
      continue;
    }
    if (!isBlockStart(line, lines[i + 1]) && items[items.length - 1].rest.length === 0) {
      // Lazy continuation of the item's first paragraph.
      items[items.length - 1].first += "\n" + line.trim();
      i += 1;
      continue;
    }
    break;
  }
  const startAttr = ordered && items[0].num !== 1 ? ` start="${items[0].num}"` : "";
  const tag = ordered ? "ol" : "ul";
  const body = items
    .map((it) => {
      const inner = it.rest.length
        ? renderInline(it.first) + renderBlocks(it.rest)
        : renderInline(it.first);
      return `<li>${inner}</li>`;
    })
    .join("");
  return { html: `<${tag}${startAttr}>${body}</${tag}>`, next: i };
}

function renderBlocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === "") {
      i += 1;
      continue;
    }
    const fence = FENCE_RE.exec(line);
    if (fence) {
      const marker = fence[1];
      const lang = fence[2];
      const code = [];
      i += 1;
      // An unclosed fence (a stream still in progress) runs to the end.
      while (i < lines.length && !lines[i].trimStart().startsWith(marker)) {
        code.push(lines[i]);
        i += 1;
      }
      i += 1;
      const cls = lang ? ` class="language-${lang}"` : "";
      out.push(`<pre class="ja-code"><code${cls}>${code.join("\n")}</code></pre>`);
      continue;
    }
    const heading = HEADING_RE.exec(line);
    if (heading) {
      const level = heading[1].length;
      out.push(`<h${level}>${renderInline(heading[2])}</h${level}>`);
      i += 1;
      continue;
    }
    if (HR_RE.test(line)) {
      out.push("<hr>");
      i += 1;
      continue;
    }
    if (LIST_RE.test(line)) {
      const { html, next } = renderList(lines, i);
      out.push(html);
      i = next;
      continue;
    }
    if (QUOTE_RE.test(line)) {
      const quoted = [];
      while (i < lines.length && lines[i].trim() !== "") {
        const m = QUOTE_RE.exec(lines[i]);
        quoted.push(m ? m[1] : lines[i]);
        i += 1;
      }
      out.push(`<blockquote>${renderBlocks(quoted)}</blockquote>`);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP_RE.test(lines[i + 1])) {
      const head = splitRow(line);
      const aligns = splitRow(lines[i + 1]).map((c) =>
        c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : "",
      );
      const cell = (tag, text, k) => {
        const a = aligns[k] ? ` style="text-align:${aligns[k]}"` : "";
        return `<${tag}${a}>${renderInline(text)}</${tag}>`;
      };
      const rows = [];
      i += 2;
      while (i < lines.length && lines[i].includes("|") && lines[i].trim() !== "") {
        const cells = splitRow(lines[i]);
        rows.push(`<tr>${head.map((_, k) => cell("td", cells[k] ?? "", k)).join("")}</tr>`);
        i += 1;
      }
      out.push(
        `<table><thead><tr>${head.map((h, k) => cell("th", h, k)).join("")}</tr></thead>` +
          `<tbody>${rows.join("")}</tbody></table>`,
      );
      continue;
    }
    const para = [line.trim()];
    i += 1;
    while (i < lines.length && lines[i].trim() !== "" && !isBlockStart(lines[i], lines[i + 1])) {
      para.push(lines[i].trim());
      i += 1;
    }
    out.push(`<p>${renderInline(para.join("\n")).replace(/\n/g, "<br>")}</p>`);
  }
  return out.join("");
}

/**
 * Render untrusted markdown `text` to an HTML string that contains only tags written here.
 */
export function markdownToHtml(text) {
  const clean = String(text ?? "")
    .replace(/[\uE000\uE001]/g, "")
    .replace(/\r\n?/g, "\n")
    .replace(/\t/g, "    ");
  return renderBlocks(escapeHtml(clean).split("\n"));
}

/**
 * Render untrusted markdown `text` into a new `<div class="ja-md">` element.
 */
export function renderMarkdown(text, doc = document) {
  const div = doc.createElement("div");
  div.className = "ja-md";
  div.innerHTML = markdownToHtml(text);
  return div;
}
