"""``run_python`` in this process: a plain namespace and a real IPython shell.

The kernel-level behaviour (the next cell sees the result, an interrupt leaves the kernel
usable) is in ``test_notebook_kernel.py``.
"""

from __future__ import annotations

import base64
import json
import signal
import sys
import threading
import time
from typing import Any

import matplotlib
import pytest

from jupyter_agent.base.secrets import MASK
from jupyter_agent.tools.notebook import PythonRun, notebook_tools, run_code
from jupyter_agent.tools.notebook._time_limit import MAX_FIRES, REFIRE_SECONDS

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def run_tool(ns: Any, code: str, **kwargs: Any) -> Any:
    t = {t.name: t for t in notebook_tools(ns, **kwargs)}["run_python"]
    return t.invoke(json.dumps({"code": code}))


def test_namespace_result_and_streams(capsys: pytest.CaptureFixture[str]) -> None:
    ns: dict[str, Any] = {"a": 20}
    r = run_tool(ns, "import sys\nb = a + 1\nprint('b is', b)\nprint('warn', file=sys.stderr)\n"
                     "b * 2")
    assert ns["b"] == 21
    assert r.error is None
    assert r.output == "[stdout]\nb is 21\n[stderr]\nwarn\n[result]\n42"
    run = r.value
    assert isinstance(run, PythonRun) and run.result == "42" and run.stdout == "b is 21\n"
    assert capsys.readouterr() == ("", "")  # nothing leaked to the real streams
    assert sys.stdout is sys.__stdout__ or "pytest" in type(sys.stdout).__module__
    assert run_tool(ns, "c = 1").output == "Done: no output."
    assert run_tool(ns, "None").output == "Done: no output."  # like a cell: None shows nothing


def test_an_error_gives_a_short_traceback_and_keeps_earlier_effects() -> None:
    ns: dict[str, Any] = {}
    r = run_tool(ns, "import json\nstep = 1\ndef parse(s):\n    return json.loads(s)\n"
                     "parse('{bad')")
    assert ns["step"] == 1
    assert r.error == "json.decoder.JSONDecodeError: Expecting property name enclosed in " \
                      "double quotes: line 1 column 2 (char 1)"
    out = r.output
    assert out.startswith("[error]\nTraceback (most recent call last):\n  File \"<agent-cell-")
    assert "parse('{bad')" in out and "return json.loads(s)" in out
    assert "jupyter_agent" not in out and "exec(" not in out  # none of our frames
    r = run_tool(ns, "def deep(n):\n    return 1 / 0 if n == 0 else deep(n - 1)\ndeep(500)")
    assert r.error == "ZeroDivisionError: division by zero"
    assert "  … 497 frames …" in r.output and r.output.count("File ") == 5
    r = run_tool(ns, "def deeper(n):\n    return deeper(n + 1)\ndeeper(0)")
    assert r.error.startswith("RecursionError") and len(r.output) < 3100


def test_syntax_error_empty_code_and_system_exit() -> None:
    ns: dict[str, Any] = {}
    r = run_tool(ns, "x = (1,\ny = 2")
    assert r.error and "SyntaxError" in r.error and "Traceback" not in r.output
    r = run_tool(ns, "   ")
    assert r.error and "code is empty" in r.output
    r = run_tool(ns, "before = 1\nraise SystemExit(3)\nafter = 1")
    assert r.error == "SystemExit: 3" and ns["before"] == 1 and "after" not in ns


def test_enormous_output_and_result_are_cut() -> None:
    r = run_tool({}, "for i in range(200_000):\n    print('line', i)\n'x' * 10_000_000")
    run = r.value
    assert "line 0\n" in run.stdout and "line 199999\n" in run.stdout
    assert "characters cut" in run.stdout and len(run.stdout) < 20_000
    assert len(run.result) < 3100 and run.result.endswith("'…")
    assert len(r.output) < 25_000


def test_secrets_in_output_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", "tok-0123456789abcdef")
    ns = {"API_KEY": "sk-notebook-secret-value-42"}
    r = run_tool(ns, "import os\nprint(API_KEY)\nprint(os.environ['SERVICE_TOKEN'])\n"
                     "{'k': API_KEY}")
    assert "sk-notebook-secret-value-42" not in r.output + repr(r.value.model_dump())
    assert "tok-0123456789abcdef" not in r.output
    assert r.output.count(MASK) == 3


def test_time_limit_interrupts_sleep_and_busy_loops_and_restores_everything() -> None:
    handler = signal.getsignal(signal.SIGINT)
    stdout = sys.stdout
    ns: dict[str, Any] = {}
    for code in ("import time\nstarted = True\ntime.sleep(60)",
                 "n = 0\nwhile True:\n    n += 1"):
        start = time.perf_counter()
        r = run_tool(ns, code, timeout=0.5)
        assert time.perf_counter() - start < 10
        assert r.value.timed_out and r.error.startswith("Interrupted: the code ran longer")
        assert "<agent-cell-" in r.output and "_time_limit.py" not in r.output
    assert ns["started"] is True and ns["n"] > 0  # effects before the interrupt are kept
    assert signal.getsignal(signal.SIGINT) is handler and sys.stdout is stdout
    assert run_tool(ns, "1 + 1").output == "[result]\n2"  # and the next call just works


def test_code_that_swallows_the_interrupt_is_interrupted_again() -> None:
    code = ("import time\ncaught = 0\n"
            "for _ in range(3):\n"
            "    try:\n        time.sleep(30)\n"
            "    except KeyboardInterrupt:\n        caught += 1\n"
            "time.sleep(30)\n")
    ns: dict[str, Any] = {}
    start = time.perf_counter()
    r = run_tool(ns, code, timeout=0.3)
    assert r.value.timed_out and ns["caught"] == 3
    assert 3 < MAX_FIRES and time.perf_counter() - start < 0.3 + MAX_FIRES * REFIRE_SECONDS + 5


def test_the_users_own_interrupt_is_not_swallowed() -> None:
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    ns: dict[str, Any] = {}
    with pytest.raises(KeyboardInterrupt) as info:
        run_tool(ns, "import time\ntime.sleep(20)", timeout=30)
    assert type(info.value) is KeyboardInterrupt  # not our TimeLimitExceeded
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_time_limit_off_the_main_thread() -> None:
    box: dict[str, Any] = {}

    def worker() -> None:
        box["run"] = run_code("n = 0\nwhile True:\n    n += 1", box.setdefault("ns", {}),
                              timeout=0.5)

    t = threading.Thread(target=worker)
    t.start()
    t.join(20)
    assert not t.is_alive() and box["run"].timed_out and box["ns"]["n"] > 0


def test_matplotlib_figures_are_captured_described_and_closed() -> None:
    plt.close("all")
    ns: dict[str, Any] = {}
    r = run_tool(ns, "import matplotlib.pyplot as plt\n"
                     "fig, ax = plt.subplots()\n"
                     "ax.plot([1, 2, 3], [4, 5, 6], label='sales')\n"
                     "ax.set_title('Monthly sales')\nax.set_xlabel('month')\nax.legend()\n"
                     "plt.show()\n"
                     "plt.figure()\nplt.bar(['a', 'b'], [1, 2])\n")
    run = r.value
    assert [f.index for f in run.figures] == [1, 2]
    first = run.figures[0]
    png = base64.b64decode(first.png_base64)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and (first.width, first.height) == (640, 480)
    assert first.description == ("[figure 1: 640x480 PNG, 1 axes, (title 'Monthly sales', "
                                 "x 'month', 1 lines, legend)]")
    assert "2 patches" in run.figures[1].description
    assert first.description in r.output and first.png_base64 not in r.output
    assert "non-interactive" not in run.stderr  # plt.show() was quiet
    assert plt.get_fignums() == []  # closed: the cell will not show them again


def test_display_calls_and_ipython_syntax_in_a_real_shell(shell: Any) -> None:
    shell.user_ns["rows"] = 3
    r = run_tool(shell, "from IPython.display import display, HTML\n"
                        "display(HTML('<b>bold</b>'))\n"
                        "%time total = rows * 2\n"
                        "total")
    assert shell.user_ns["total"] == 6
    assert "<IPython.core.display.HTML object>" in r.output  # captured, not shown in the cell
    assert "Wall time" in r.value.stdout and r.output.endswith("[result]\n6")
    from IPython.core.displaypub import DisplayPublisher

    assert isinstance(shell.display_pub, DisplayPublisher)  # the real publisher is back


def test_nested_limits_each_catch_their_own() -> None:
    from jupyter_agent.tools.notebook._time_limit import call_with_limit

    def inner_times_out() -> str:
        ok, _ = call_with_limit(lambda: time.sleep(30), 0.2)
        return "inner timed out" if not ok else "inner finished"

    start = time.perf_counter()
    assert call_with_limit(inner_times_out, 10) == (True, "inner timed out")
    assert time.perf_counter() - start < 5

    def outer_wins() -> None:
        call_with_limit(lambda: time.sleep(30), 20)  # the inner limit must not catch it

    start = time.perf_counter()
    assert call_with_limit(outer_wins, 0.3) == (False, None)
    assert time.perf_counter() - start < 5
    for _ in range(20):  # limits that expire together: nothing stray is left behind
        call_with_limit(lambda: call_with_limit(lambda: time.sleep(1), 0.05), 0.05)
    time.sleep(0.2)
    assert run_code("1", {}).result == "1"
