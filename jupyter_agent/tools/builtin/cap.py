"""Cutting long tool results down to size, keeping both ends.

A result that is too long is cut (docs/behaviour.md §5.4). Keeping the head *and* the tail matters
for tool output: a build log's first lines say what ran and its last lines say how it ended.
"""

from __future__ import annotations

__all__ = ["DEFAULT_LIMIT", "HeadTailBuffer", "cap_output", "cut_marker"]

DEFAULT_LIMIT = 30_000
"""Default number of characters a built-in tool returns to the model."""


def cut_marker(cut: int, total: int, unit: str = "characters") -> str:
    """The line inserted where text was cut, saying how much is missing.

    Args:
        cut: How much was left out.
        total: How long the whole output was.
        unit: What ``cut`` and ``total`` count ("characters" or "bytes").
    """
    return f"\n\n[... {cut:,} {unit} cut (output was {total:,} {unit}) ...]\n\n"


def cap_output(text: str, limit: int = DEFAULT_LIMIT, *, head_ratio: float = 0.5) -> str:
    """Return ``text`` unchanged if it fits in ``limit`` characters, else its head and tail.

    The kept head and tail add up to ``limit`` characters; the marker between them (about 60
    characters) says how many characters were cut.

    Args:
        text: The text to cut.
        limit: Characters to keep in total (head plus tail).
        head_ratio: Share of ``limit`` given to the head (1.0 keeps only the head).
    """
    if limit < 0:
        raise ValueError("limit must be >= 0")
    if len(text) <= limit:
        return text
    head_len = int(limit * head_ratio)
    tail_len = limit - head_len
    cut = len(text) - limit
    tail = text[len(text) - tail_len :] if tail_len else ""
    return text[:head_len] + cut_marker(cut, len(text)) + tail


class HeadTailBuffer:
    """Collects a byte stream of any size while keeping only its first and last bytes.

    A command printing gigabytes must not fill the kernel's memory: past ``2 * keep`` bytes the
    middle is dropped as it arrives and only the count is kept.
    """

    def __init__(self, keep: int = DEFAULT_LIMIT) -> None:
        """Keep at most ``keep`` bytes of the head and ``keep`` bytes of the tail."""
        self.keep = keep
        self.total = 0
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped = 0

    def feed(self, data: bytes) -> None:
        """Append a chunk of the stream."""
        self.total += len(data)
        room = self.keep - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail += data
        # Trim only once the tail is twice too long, so trimming costs O(1) per byte overall.
        if len(self._tail) > 2 * self.keep:
            excess = len(self._tail) - self.keep
            del self._tail[:excess]
            self._dropped += excess

    def render(self, limit: int = DEFAULT_LIMIT) -> str:
        """Decode the collected bytes (UTF-8, bad bytes replaced) and cap them to ``limit``."""
        if not self._dropped:
            return cap_output(bytes(self._head + self._tail).decode("utf-8", "replace"), limit)
        head = bytes(self._head).decode("utf-8", "replace")[: limit // 2]
        tail_text = bytes(self._tail).decode("utf-8", "replace")
        tail_len = max(0, limit - len(head))
        tail = tail_text[max(0, len(tail_text) - tail_len) :] if tail_len else ""
        cut = self.total - len(head.encode()) - len(tail.encode())
        return head + cut_marker(cut, self.total, "bytes") + tail
