"""Cutting long results: head and tail kept, the marker says how much went."""

from __future__ import annotations

from jupyter_agent.tools.builtin.cap import HeadTailBuffer, cap_output


def test_short_text_is_unchanged() -> None:
    assert cap_output("hello", 10) == "hello"


def test_long_text_keeps_head_and_tail_and_counts_the_cut() -> None:
    text = "A" * 50 + "B" * 900 + "C" * 50
    out = cap_output(text, 100)
    assert out.startswith("A" * 50) and out.endswith("C" * 50)
    assert "[... 900 characters cut (output was 1,000 characters) ...]" in out
    assert cap_output(text, 100, head_ratio=1.0).startswith("A" * 50 + "B" * 50)


def test_stream_buffer_keeps_memory_bounded_and_both_ends() -> None:
    buf = HeadTailBuffer(1000)
    buf.feed(b"START")
    for _ in range(10_000):
        buf.feed(b"x" * 1000)
    buf.feed(b"END")
    assert len(buf._head) + len(buf._tail) <= 3000
    out = buf.render(1000)
    assert out.startswith("START") and out.endswith("END")
    assert "bytes cut (output was 10,000,008 bytes)" in out
    assert len(out) < 1100


def test_stream_buffer_renders_small_output_whole() -> None:
    buf = HeadTailBuffer(1000)
    buf.feed("héllo\n".encode())
    assert buf.render(1000) == "héllo\n"
