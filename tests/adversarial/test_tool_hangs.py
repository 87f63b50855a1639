"""Tools that never hang: hostile files, hostile patterns and hostile tool functions.

A FIFO, a device or a socket in the workspace is refused at once (never opened for a blocking
read); a symlink swapped in between the check and the read never leads outside; a catastrophic
regular expression stops at the search's time budget; a ``@tool`` that sleeps forever is cut at
its deadline while the run goes on; a huge result is cut before it reaches the model.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jupyter_agent import tool, toolloop
from jupyter_agent.base.errors import ConfigError, ToolError
from jupyter_agent.runtime.catalog import builtin_tools
from jupyter_agent.tools.builtin import Workspace, WorkspaceError, make_builtin_functions
from jupyter_agent.tools.builtin import files as _files
from jupyter_agent.tools.registry import MAX_OUTPUT_CHARS, Tool
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)"),
]

GENEROUS = 30.0
"""A bound no healthy call comes near, even on a loaded machine; a hang would pass it."""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def fns(ws: Path) -> dict[str, Callable[..., str]]:
    return make_builtin_functions(Workspace(ws))


def finishes(fn: Callable[[], object], within: float = GENEROUS) -> object:
    """``fn()``'s result or exception, failing the test (not hanging it) if it does not return."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(within)
    assert not t.is_alive(), f"still running after {within} s: it hangs"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


# ------------------------------------------------------------------ special files


def test_a_fifo_is_refused_at_once(ws: Path, fns: dict[str, Callable[..., str]]) -> None:
    os.mkfifo(ws / "pipe")
    with pytest.raises(WorkspaceError, match=r"'pipe' is a FIFO \(named pipe\), not a regular "
                                             r"file; it was not read"):
        finishes(lambda: fns["read_file"]("pipe"))
    (ws / "notes.txt").write_text("needle\n")
    # The search walks past it, and finds what it should.
    assert finishes(lambda: fns["search_files"]("needle")) == "notes.txt:1: needle"


def test_a_fifo_with_a_writer_waiting_is_still_refused(ws: Path,
                                                       fns: dict[str, Callable[..., str]]) -> None:
    os.mkfifo(ws / "pipe")
    fd = os.open(ws / "pipe", os.O_RDWR | os.O_NONBLOCK)  # a writer keeps it open
    try:
        os.write(fd, b"DATA-FROM-THE-PIPE\n")
        with pytest.raises(WorkspaceError, match="FIFO"):
            finishes(lambda: fns["read_file"]("pipe"))
        assert os.read(fd, 100) == b"DATA-FROM-THE-PIPE\n"  # nothing was consumed
    finally:
        os.close(fd)


def test_dev_zero_is_refused_however_it_is_named(ws: Path,
                                                 fns: dict[str, Callable[..., str]]) -> None:
    (ws / "zero").symlink_to("/dev/zero")
    for name in ("zero", "/dev/zero", "../../../../../../dev/zero"):
        with pytest.raises(WorkspaceError):
            finishes(lambda n=name: fns["read_file"](n))
    try:
        os.mknod(ws / "zero-node", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    except (PermissionError, OSError):
        return  # not allowed to make device nodes here: the link cases above still count
    with pytest.raises(WorkspaceError, match="'zero-node' is a character device"):
        finishes(lambda: fns["read_file"]("zero-node"))
    assert "No matches" in str(finishes(lambda: fns["search_files"]("x")))


def test_a_socket_is_refused(ws: Path, fns: dict[str, Callable[..., str]]) -> None:
    path = ws / "s.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        srv.bind(str(path))
        srv.listen(1)
        with pytest.raises(WorkspaceError, match="socket"):
            finishes(lambda: fns["read_file"]("s.sock"))
    finally:
        srv.close()


def _flipper(actions: list[Callable[[], None]]) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()

    def flip() -> None:
        i = 0
        while not stop.is_set():
            actions[i % len(actions)]()
            i += 1

    t = threading.Thread(target=flip, daemon=True)
    t.start()
    return stop, t


def test_a_folder_swapped_for_a_link_outside_never_leaks(
        ws: Path, tmp_path: Path, fns: dict[str, Callable[..., str]]) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("OUTSIDE-SECRET\n")
    real, link = ws / "d.real", ws / "d.link"
    real.mkdir()
    (real / "f.txt").write_text("inside\n")
    link.symlink_to(outside)
    target = ws / "d"
    os.rename(real, target)

    def to_link() -> None:  # atomically: d becomes the link to outside
        os.rename(target, real)
        os.rename(link, target)

    def to_real() -> None:
        os.rename(target, link)
        os.rename(real, target)

    stop, t = _flipper([to_link, to_real])
    seen: set[str] = set()
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            for fn in (lambda: fns["read_file"]("d/f.txt"),
                       lambda: fns["search_files"]("SECRET|inside")):
                try:
                    seen.add(str(finishes(fn)))
                except (WorkspaceError, ToolError) as exc:
                    seen.add(f"refused: {exc}")
    finally:
        stop.set()
        t.join(5)
    assert not any("OUTSIDE-SECRET" in s for s in seen), seen
    assert "inside\n" in seen  # the legitimate read did happen between swaps


def test_a_file_swapped_for_a_fifo_never_hangs(ws: Path,
                                               fns: dict[str, Callable[..., str]]) -> None:
    regular, fifo, target = ws / ".regular", ws / ".fifo", ws / "data.txt"
    target.write_text("ok\n")
    regular.write_text("ok\n")
    os.mkfifo(fifo)

    def swap_in(src: Path, spare: Path) -> Callable[[], None]:
        def act() -> None:
            os.rename(target, spare)  # park the current one, then move the other in
            os.rename(src, target)
        return act

    # target alternates: regular -> fifo -> regular ... (each rename is atomic)
    stop, t = _flipper([swap_in(fifo, regular), swap_in(regular, fifo)])
    outcomes: list[str] = []
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            for fn in (lambda: fns["read_file"]("data.txt"),
                       lambda: fns["search_files"]("ok", glob="data.txt")):
                try:
                    outcomes.append(str(finishes(fn)))
                except WorkspaceError as exc:
                    outcomes.append(f"refused: {exc}")
    finally:
        stop.set()
        t.join(5)
    assert outcomes  # every call returned (a hang fails inside ``finishes``)
    # A FIFO met on the way is skipped by the search and refused by read_file, never read.
    assert {o for o in outcomes if not o.startswith("refused")} <= {
        "ok\n", "data.txt:1: ok", "No matches for 'ok' in . (files matching 'data.txt')."}


def test_a_link_to_outside_is_refused_not_followed(ws: Path, tmp_path: Path,
                                                   fns: dict[str, Callable[..., str]]) -> None:
    (tmp_path / "secret.txt").write_text("OUTSIDE-SECRET\n")
    (ws / "leak.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(WorkspaceError, match="symlink to outside the workspace"):
        fns["read_file"]("leak.txt")
    assert "OUTSIDE-SECRET" not in fns["search_files"]("SECRET")


# ------------------------------------------------------------------ big files


def test_a_gigantic_single_line_is_not_loaded_whole(ws: Path,
                                                    fns: dict[str, Callable[..., str]]) -> None:
    size = 3 * _files.MAX_LINE_BYTES + 17
    with open(ws / "one-line.txt", "wb") as f:
        f.write(b"a" * size)
        f.write(b"\nsecond line\n")
    out = str(finishes(lambda: fns["read_file"]("one-line.txt")))
    assert len(out) < 31_000
    assert out.startswith("aaaa") and "characters cut" in out
    assert "showing lines 1-1 of 2" in out  # the skipped bytes still count as one line
    assert fns["read_file"]("one-line.txt", offset=1) == "second line\n"


# ------------------------------------------------------------------ hostile patterns


def test_a_catastrophic_pattern_stops_at_the_budget(ws: Path,
                                                    fns: dict[str, Callable[..., str]]) -> None:
    (ws / "evil.txt").write_text(("a" * 60 + "b\n") * 3)  # years of backtracking per line
    with pytest.raises(ToolError) as err:
        finishes(lambda: fns["search_files"]("(a|aa)+$"))
    assert str(err.value) == (
        "No match found before the search stopped. [search stopped: the pattern is too slow on "
        "line 1 of evil.txt (nested repeats such as (a+)+ can backtrack without end); simplify "
        "the pattern]")


def test_nested_repeats_the_engine_handles_just_finish(ws: Path,
                                                      fns: dict[str, Callable[..., str]]) -> None:
    (ws / "a.txt").write_text("a" * 5000 + "b\n" + "aaaa\n")
    out = finishes(lambda: fns["search_files"]("^(a+)+$"), within=GENEROUS)
    assert out == "a.txt:2: aaaa"


def test_matches_before_a_slow_line_are_kept(ws: Path,
                                             fns: dict[str, Callable[..., str]]) -> None:
    (ws / "mixed.txt").write_text("aa\n" + "a" * 60 + "b\n")
    out = str(finishes(lambda: fns["search_files"]("(a|aa)+$")))
    assert out.startswith("mixed.txt:1: aa\n[search stopped: ")
    assert "too slow on line 2 of mixed.txt" in out


def test_a_broken_pattern_is_a_clear_error(fns: dict[str, Callable[..., str]]) -> None:
    with pytest.raises(ToolError, match=r"Invalid regular expression '\(unclosed'"):
        fns["search_files"]("(unclosed")


# ------------------------------------------------------------------ hostile tool functions


def _tool_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("jupyter-agent-tool-")]


def test_a_tool_sleeping_forever_is_cut_and_the_run_goes_on(server: ScriptedOpenAI) -> None:
    never = threading.Event()

    @tool(timeout=1)
    def stuck() -> str:
        """Waits for something that never happens."""
        never.wait()
        return "unreachable"

    @tool
    def fine() -> str:
        """Answers."""
        return "fine-result"

    server.enqueue(tool_calls([call("stuck", {})]), tool_calls([call("fine", {})]),
                   text("The first tool hung; the second said fine-result."))
    try:
        run = finishes(lambda: toolloop("Use the tools."))
    finally:
        never.set()
    assert run.status == "done"  # type: ignore[attr-defined]
    results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert results == ["Tool error: timed out after 1 s (stuck did not finish and was abandoned; "
        "raise @tool(timeout=...) or JUPYTER_AGENT_TOOL_TIMEOUT)",
                       "fine-result"]


def test_the_package_default_deadline_applies_and_is_configurable(
        monkeypatch: pytest.MonkeyPatch, server: ScriptedOpenAI) -> None:
    monkeypatch.setenv("JUPYTER_AGENT_TOOL_TIMEOUT", "1")
    never = threading.Event()

    @tool
    def sleeps() -> str:
        """Sleeps."""
        never.wait()
        return "unreachable"

    server.enqueue(tool_calls([call("sleeps", {})]), text("It hung."))
    try:
        run = finishes(lambda: toolloop("Go."))
    finally:
        never.set()
    assert run.status == "done"  # type: ignore[attr-defined]
    assert sleeps.deadline() == 1.0
    assert server.requests[-1]["messages"][-1]["content"] == (
        "Tool error: timed out after 1 s (sleeps did not finish and was abandoned; "
        "raise @tool(timeout=...) or JUPYTER_AGENT_TOOL_TIMEOUT)")


def test_a_busy_loop_is_abandoned_and_then_really_stops() -> None:
    @tool(timeout=0.5)
    def spin() -> str:
        """Spins."""
        while True:
            pass

    r = finishes(lambda: spin.invoke("{}"))
    assert r.output == (
        "Tool error: timed out after 0.5 s (spin did not finish and was abandoned; "
        "raise @tool(timeout=...) or JUPYTER_AGENT_TOOL_TIMEOUT)")
    deadline = time.monotonic() + GENEROUS
    while any(t.name.endswith("-spin") for t in _tool_threads()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name.endswith("-spin") for t in _tool_threads())  # it did not burn on


def test_a_busy_loop_catching_everything_still_stops() -> None:
    @tool(timeout=0.5)
    def stubborn() -> str:
        """Catches every Exception."""
        while True:
            try:
                while True:
                    pass
            except Exception:  # noqa: BLE001 - what a careless tool does
                continue

    r = finishes(lambda: stubborn.invoke("{}"))
    assert r.error is not None and "timed out after 0.5 s" in r.error
    deadline = time.monotonic() + GENEROUS
    while any(t.name.endswith("-stubborn") for t in _tool_threads()) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name.endswith("-stubborn") for t in _tool_threads())


def test_an_async_tool_is_cancelled_and_one_blocking_its_loop_abandoned() -> None:
    cleaned: list[str] = []

    @tool(timeout=0.5)
    async def waits() -> str:
        """Awaits forever."""
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append("waits")
        return "unreachable"

    @tool(timeout=0.5)
    async def blocks() -> str:
        """Blocks its own event loop."""
        time.sleep(5)
        return "late"

    r = finishes(lambda: waits.invoke("{}"))
    assert r.output == (
        "Tool error: timed out after 0.5 s (waits did not finish and was cancelled; "
        "raise @tool(timeout=...) or JUPYTER_AGENT_TOOL_TIMEOUT)")
    assert cleaned == ["waits"]  # cancellation ran its cleanup
    r = finishes(lambda: blocks.invoke("{}"))
    assert r.output == (
        "Tool error: timed out after 0.5 s (blocks did not finish and was abandoned; "
        "raise @tool(timeout=...) or JUPYTER_AGENT_TOOL_TIMEOUT)")


def test_bad_deadlines_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    def f() -> None:
        """Does nothing."""

    for bad in (0, -1, "5"):
        with pytest.raises(ToolError, match="'f': timeout must be a positive number of seconds"):
            tool(timeout=bad)(f)  # type: ignore[arg-type]
    monkeypatch.setenv("JUPYTER_AGENT_TOOL_TIMEOUT", "soon")

    @tool
    def quick() -> str:
        """Quick."""
        return "ok"

    with pytest.raises(ConfigError, match="JUPYTER_AGENT_TOOL_TIMEOUT must be a positive number "
                                          "of seconds or 'none', not 'soon'"):
        quick.invoke("{}")
    monkeypatch.setenv("JUPYTER_AGENT_TOOL_TIMEOUT", "none")
    assert quick.deadline() is None and quick.invoke("{}").output == "ok"


def test_no_deadline_runs_in_the_callers_thread() -> None:
    seen: list[str] = []

    @tool(timeout=float("inf"))
    def where() -> str:
        """Says where it runs."""
        seen.append(threading.current_thread().name)
        return "ok"

    assert where.invoke("{}").output == "ok"
    assert seen == [threading.current_thread().name]


def test_on_the_main_thread_a_tool_keeps_it_and_a_blocking_sleep_is_interrupted() -> None:
    # A cell runs its tool loop on the kernel's main thread: tools stay there (matplotlib,
    # SQLite connections, widgets expect it) and the deadline breaks even a blocking sleep.
    assert threading.current_thread() is threading.main_thread()
    seen: list[bool] = []

    @tool(timeout=0.5)
    def sleeper() -> str:
        """Sleeps far past its deadline, swallowing ordinary exceptions."""
        seen.append(threading.current_thread() is threading.main_thread())
        try:
            time.sleep(60)
        except Exception:  # noqa: BLE001 - the deadline is not an Exception: it still ends
            time.sleep(60)
        return "unreachable"

    started = time.monotonic()
    r = sleeper.invoke("{}")
    assert r.output == ("Tool error: timed out after 0.5 s (sleeper did not finish and was "
                        "interrupted; raise @tool(timeout=...) or JUPYTER_AGENT_TOOL_TIMEOUT)")
    assert seen == [True]
    assert time.monotonic() - started < GENEROUS
    # The timer is gone and the handler restored: a later call is not hit by a stray alarm.
    import signal

    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)

    @tool(timeout=5)
    def quick() -> str:
        """Returns at once."""
        return "ok"

    assert quick.invoke("{}").output == "ok"
    time.sleep(0.6)  # past where the first call's timer would have fired


def test_a_huge_result_is_cut_before_the_model_sees_it() -> None:
    @tool
    def flood() -> str:
        """Returns far too much."""
        return "HEAD" + "x" * 5_000_000 + "TAIL"

    @tool
    def flood_error() -> str:
        """Fails with a huge message."""
        raise ValueError("y" * 5_000_000)

    r = flood.invoke("{}")
    assert len(r.output) < MAX_OUTPUT_CHARS + 200
    assert r.output.startswith("HEAD") and r.output.endswith("TAIL")
    assert "characters cut (output was 5,000,008 characters)" in r.output
    assert len(r.value) == 5_000_008  # the raw value stays whole for the notebook
    e = flood_error.invoke("{}")
    assert e.error is not None and len(e.error) < MAX_OUTPUT_CHARS + 200


@pytest.fixture
def marker() -> Iterator[str]:
    m = f"1000.{random.randrange(10**8, 10**9)}"
    yield m
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if m.encode() in f.read():
                        os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass


def test_an_interrupt_reaches_bash_running_under_its_deadline(ws: Path, marker: str) -> None:
    bash: Tool = builtin_tools(Workspace(ws))["bash"]
    assert bash.deadline() is not None  # runs in a deadline thread, not the main thread
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            bash.invoke(f'{{"command": "setsid sleep {marker} & sleep {marker}"}}')
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    leftover = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    cmd = f.read()
                with open(f"/proc/{name}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker.encode() in cmd and state != "Z":
                leftover.append(name)
    assert leftover == []
