// Types of markdown.js (a safe markdown renderer for untrusted model output).

/** Escape the five HTML-significant characters of `text`. */
export function escapeHtml(text: string): string;

/** Render untrusted markdown to an HTML string containing only tags this module writes. */
export function markdownToHtml(text: string): string;

/** Render untrusted markdown into a new `<div class="ja-md">`. */
export function renderMarkdown(text: string, doc?: Document): HTMLDivElement;
