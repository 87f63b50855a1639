"""The notebook tools against a hostile namespace: secrets in odd places, objects that lie,
hang or nest without end. Each test asserts what stayed hidden or bounded."""

from __future__ import annotations

import json
import time
from typing import Any

import pandas as pd
import polars as pl
import pytest

from jupyter_agent.base.secrets import MASK, register_secret
from jupyter_agent.tools.notebook import notebook_tools, summarize, summary_line

pytestmark = pytest.mark.timeout(120)

SECRET = "sk-adversarial-0123456789abcdef"


def tools_of(ns: Any, **kwargs: Any) -> dict[str, Any]:
    return {t.name: t for t in notebook_tools(ns, **kwargs)}


def every_output(ns: dict[str, Any]) -> str:
    """What the model would read after listing and inspecting every variable."""
    tools = tools_of(ns)
    out = [tools["list_variables"].invoke("{}").output]
    for name in list(ns):
        out.append(tools["inspect_variable"].invoke(json.dumps({"name": name})).output)
    return "\n".join(out)


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "openai_api_key", "AWS_SECRET_ACCESS_KEY",
                                  "hf_token", "mytoken", "db_password", "client_secret",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "auth", "privatekey"])
def test_secret_names_in_every_spelling_are_never_shown(name: str) -> None:
    ns = {name: SECRET, "harmless": 1}
    text = every_output(ns)
    assert SECRET not in text and f"{name} (" not in text
    r = tools_of(ns)["run_python"].invoke(json.dumps({"code": f"print({name})\n{name}"}))
    assert SECRET not in r.output and r.output.count(MASK) == 2


def test_a_known_secret_under_an_innocent_name_is_masked_everywhere() -> None:
    register_secret(SECRET)
    ns = {"greeting": f"hello {SECRET}", "nested": {"deep": [SECRET]},
          "frame": pd.DataFrame({"note": [SECRET, "x"]}),
          "pframe": pl.DataFrame({"note": [SECRET, "x"]})}
    text = every_output(ns)
    assert SECRET not in text and text.count(MASK) >= 5


def test_columns_and_keys_named_like_secrets_hide_their_values() -> None:
    df = pd.DataFrame({"user": ["ann", "bob"], "password": ["hunter2pass", "letmein99"]})
    text = summarize(df)
    assert "hunter2pass" not in text and "letmein99" not in text and "ann" in text
    pdf = pl.DataFrame({"user": ["ann"], "api_key": ["abc-very-private"]})
    assert "abc-very-private" not in summarize(pdf)
    cfg = {"token": "tok-123456789", "nested": {"Password": "pw-987654321"}, "ok": "visible"}
    for text in (summarize(cfg), summary_line(cfg)):
        assert "tok-123456789" not in text and "pw-987654321" not in text


def test_an_object_that_lies_about_its_class() -> None:
    class Liar:
        @property  # type: ignore[misc]
        def __class__(self) -> type:
            return pd.DataFrame

        def __repr__(self) -> str:
            return "Liar()"

    r = tools_of({"liar": Liar()})["inspect_variable"].invoke('{"name": "liar"}')
    assert r.error is None and "no summary" in r.output and "Liar()" in r.output


def test_deep_nesting_and_self_reference_are_bounded() -> None:
    deep: list[Any] = []
    cur = deep
    for _ in range(100_000):
        nxt: list[Any] = []
        cur.append(nxt)
        cur = nxt
    loop: dict[str, Any] = {}
    loop["me"] = [loop, loop]
    ns = {"deep": deep, "loop": loop}
    text = every_output(ns)
    assert len(text) < 10_000 and "{...}" in text


def test_hostile_attribute_access_and_len() -> None:
    class Trap:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError(f"trap {name}")

        def __len__(self) -> int:
            time.sleep(600)
            return 0

    start = time.perf_counter()
    text = every_output({"trap": Trap()})
    assert time.perf_counter() - start < 30 and "trap (" in text and "Trap object" in text
    r = tools_of({"trap": Trap()})["inspect_variable"].invoke('{"name": "trap.anything"}')
    assert r.error and "trap anything" in r.output  # the attribute's own error, one line


def test_run_python_cannot_leave_the_streams_broken_or_dodge_the_limit() -> None:
    import signal
    import sys

    streams = (sys.stdout, sys.stderr)
    sigint = signal.getsignal(signal.SIGINT)
    run = tools_of({}, timeout=1)["run_python"]
    for code in ("import sys\nsys.stdout = None\nsys.stderr = None",
                 "import sys\nsys.stdout.close()"):
        assert run.invoke(json.dumps({"code": code})) is not None
        assert (sys.stdout, sys.stderr) == streams
    try:
        # Code that ignores Ctrl-C, or even takes over the limit's own signal, is still
        # stopped: a real signal for the first, an exception at the next bytecode for the
        # second.
        for code in ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                     "time.sleep(60)",
                     "import signal\nsignal.signal(signal.SIGUSR2, signal.SIG_IGN)\n"
                     "n = 0\nwhile True:\n    n += 1"):
            start = time.perf_counter()
            r = run.invoke(json.dumps({"code": code}))
            assert time.perf_counter() - start < 20 and r.value.timed_out, r.output
    finally:
        signal.signal(signal.SIGINT, sigint)  # the code itself changed these: put them back
        signal.signal(signal.SIGUSR2, signal.SIG_DFL)


def test_a_list_of_slow_objects_costs_one_budget_not_one_second_each() -> None:
    class Slow:
        def __repr__(self) -> str:
            time.sleep(600)
            return "never"

    start = time.perf_counter()
    text = summarize([Slow() for _ in range(50)])
    assert time.perf_counter() - start < 10  # not 20 items × 1 s
    assert text.startswith("list: 50 items (types: Slow ×50)") and "<Slow>" in text
