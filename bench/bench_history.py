"""A session's cost at scale: a chat turn deep into a long session, and ``%agent sessions``
over a big store.

1. One ``chat`` turn (history 6 rounds, not streamed) in sessions already holding 10, 2,000 and
   10,000 turns, against the scripted server in a child process. The turns are interleaved
   (one in each session, again and again) and the median of each is reported, as a ratio to the
   10-turn session's. Goal: at most 1.2x at 2,000 and at 10,000 turns.
2. ``%agent sessions`` over a store of 10,000 sessions and 100,000 runs, against a plain
   ``SELECT`` of the same rows. Goal: at most 100 ms.

The long sessions and the big store are filled with direct SQL (rows shaped like the ones a
real turn writes: a run, a turn, the user's and the assistant's messages), which takes seconds
instead of hours. Run: ``python bench/bench_history.py [--quick]``. Nothing asserts a time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._server import serve, stop  # noqa: E402
from tests.fakes.openai_server import text  # noqa: E402

MODEL = "gpt-4.1-mini"
KEY = "sk-bench-not-a-secret"
GOAL_TURN = 1.2
GOAL_SESSIONS_MS = 100.0
ANSWER = "A short answer about the data, " * 6


def fill_session(conn: sqlite3.Connection, name: str, turns: int, t0: float) -> None:
    """``turns`` finished chat turns in session ``name``, as a real turn writes them."""
    conn.execute("INSERT INTO sessions (name, created, updated) VALUES (?, ?, ?)",
                 (name, t0, t0 + turns))
    runs, turn_rows, messages = [], [], []
    for i in range(turns):
        run_id, turn_id, at = uuid.uuid4().hex, uuid.uuid4().hex, t0 + i
        runs.append((run_id, name, "chat", "done", at, at + 0.5))
        turn_rows.append((turn_id, name, run_id, "ask", MODEL, at, 0.5, 120, 40, "done"))
        user = {"role": "user", "content": f"Question {i}: what does column {i % 7} hold?"}
        bot = {"role": "assistant", "content": f"{ANSWER}({i})"}
        messages.append((name, 2 * i + 1, "user", json.dumps(user), turn_id, at + 0.1))
        messages.append((name, 2 * i + 2, "assistant", json.dumps(bot), turn_id, at + 0.4))
    conn.executemany("INSERT INTO runs (run_id, session, kind, status, created, updated)"
                     " VALUES (?, ?, ?, ?, ?, ?)", runs)
    conn.executemany("INSERT INTO turns (id, session, run_id, mode, model, started, duration,"
                     " input_tokens, output_tokens, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     turn_rows)
    conn.executemany("INSERT INTO messages (session, seq, role, content, turn_id, created)"
                     " VALUES (?, ?, ?, ?, ?, ?)", messages)


def _open(path: Path) -> sqlite3.Connection:
    from jupyter_agent.session.store import Store

    Store(path).close()  # creates the file with the current schema
    return sqlite3.connect(path)


def turn_cost(sizes: list[int], repeat: int) -> dict[int, float]:
    """Median ms of one chat turn in a session of each size."""
    import jupyter_agent
    from jupyter_agent.clients.factory import clear_client_cache
    from jupyter_agent.session.store import swap_default_store

    home = Path(tempfile.mkdtemp(prefix="jupyter-agent-bench-history-"))
    path = home / "store.sqlite3"
    conn = _open(path)
    t0 = time.time() - 10 * max(sizes) - 100
    with conn:
        for n in sizes:
            fill_session(conn, f"s{n}", n, t0)
    conn.close()
    proc, url = serve(text("Fine."))
    os.environ.update(OPENAI_BASE_URL=url, OPENAI_API_KEY=KEY, JUPYTER_AGENT_HOME=str(home))
    clear_client_cache()
    swap_default_store(None)
    times: dict[int, list[float]] = {n: [] for n in sizes}
    try:
        for n in sizes:  # warm up: imports, the connection
            jupyter_agent.chat("Warm up.", session=f"s{n}", model=MODEL, stream=False)
        for _ in range(repeat):
            for n in sizes:
                t = time.perf_counter()
                run = jupyter_agent.chat("And column 3?", session=f"s{n}", model=MODEL,
                                         stream=False)
                times[n].append((time.perf_counter() - t) * 1000)
                assert run.status == "done", run.status
    finally:
        stop(proc)
        swap_default_store(None)
    return {n: statistics.median(ts) for n, ts in times.items()}


def sessions_cost(n_sessions: int, n_runs: int, repeat: int) -> dict[str, float]:
    """Median ms of ``%agent sessions`` and of a plain query, over a big store."""
    from jupyter_agent.edge.commands import run_command
    from jupyter_agent.session.store import swap_default_store

    home = Path(tempfile.mkdtemp(prefix="jupyter-agent-bench-sessions-"))
    path = home / "store.sqlite3"
    conn = _open(path)
    t0 = time.time() - n_runs - 100
    with conn:
        conn.executemany("INSERT INTO sessions (name, group_name, created, updated)"
                         " VALUES (?, ?, ?, ?)",
                         [(f"session-{i:05d}", f"g{i % 10}" if i % 3 == 0 else None, t0 + i,
                           t0 + i * 7 % n_sessions) for i in range(n_sessions)])
        conn.executemany("INSERT INTO runs (run_id, session, kind, status, created, updated)"
                         " VALUES (?, ?, ?, ?, ?, ?)",
                         [(uuid.uuid4().hex, f"session-{i % n_sessions:05d}", "chat", "done",
                           t0 + i, t0 + i) for i in range(n_runs)])
    os.environ["JUPYTER_AGENT_HOME"] = str(home)
    swap_default_store(None)
    ours, plain = [], []
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # warm up: the store opens, imports
            run_command("sessions", {})
        for _ in range(repeat):
            t = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()) as out:
                run_command("sessions", {})
            ours.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            rows = conn.execute("SELECT name, group_name, agent, model, updated FROM sessions"
                                " ORDER BY updated DESC, name").fetchall()
            plain.append((time.perf_counter() - t) * 1000)
        assert rows and out.getvalue()
    finally:
        conn.close()
        swap_default_store(None)
    return {"sessions": n_sessions, "runs": n_runs, "ours_ms": statistics.median(ours),
            "plain_ms": statistics.median(plain), "lines": out.getvalue().count("\n")}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="turns per session (median)")
    ap.add_argument("--quick", action="store_true", help="7 turns each")
    args = ap.parse_args(argv)
    repeat = 7 if args.quick else args.repeat
    sizes = [10, 2000, 10000]
    turns = turn_cost(sizes, repeat)
    print(f"One chat turn (history 6 rounds), median of {repeat}, interleaved")
    base = turns[sizes[0]]
    for n in sizes:
        ratio = turns[n] / base
        goal = "" if n == sizes[0] else (
            f"  (goal <= {GOAL_TURN}x -> {'OK' if ratio <= GOAL_TURN else 'MISSED'})")
        print(f"  at turn {n:>6,}: {turns[n]:7.2f} ms  {ratio:5.2f}x turn {sizes[0]}{goal}")
    s = sessions_cost(10_000, 100_000, repeat)
    print(f"%agent sessions over {s['sessions']:,} sessions and {s['runs']:,} runs: "
          f"{s['ours_ms']:.1f} ms ({s['lines']} lines printed; a plain SELECT of every row "
          f"{s['plain_ms']:.1f} ms, ratio {s['ours_ms'] / s['plain_ms']:.2f}) "
          f"(goal <= {GOAL_SESSIONS_MS:.0f} ms -> "
          f"{'OK' if s['ours_ms'] <= GOAL_SESSIONS_MS else 'MISSED'})")
    return {"turns": turns, "sessions": s}


if __name__ == "__main__":
    main()
