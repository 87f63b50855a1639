"""``Run.abort()``: the flag the loop checks, racing the stream (docs/behaviour.md §2.11)."""

from __future__ import annotations

from typing import Any

from jupyter_agent import tool, toolloop
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls


def test_abort_during_a_stream_ends_the_run_as_aborted(server: ScriptedOpenAI) -> None:
    from jupyter_agent.agents.run import last_run

    def stop_on_first_delta(event: Any) -> None:
        if event.type == "text_delta":
            last_run().abort()  # type: ignore[union-attr]

    server.enqueue(text("a long answer " * 50, chunk_size=4))
    run = toolloop("Talk.", listeners=[stop_on_first_delta])
    assert run.status == "aborted"
    assert len(server.requests) == 1
    assert len([e for e in run.events if e.type == "text_delta"]) == 1


def test_abort_between_rounds_answers_every_call_and_stops(server: ScriptedOpenAI) -> None:
    @tool
    def step(n: int) -> str:
        """Do one step."""
        from jupyter_agent.agents.run import last_run

        last_run().abort()  # type: ignore[union-attr]
        return f"step {n} done"

    server.enqueue(tool_calls([call("step", {"n": 1}, id="s1")]))
    run = toolloop("Go.")
    assert run.status == "aborted"
    assert len(server.requests) == 1
    assert run.messages[-1] == {"role": "tool", "tool_call_id": "s1", "content": "step 1 done"}
    # the next run works normally
    server.enqueue(text("fine"))
    assert toolloop("Again.").answer == "fine"


def test_abort_of_a_run_waiting_on_a_held_request_closes_it_at_once(
        server: ScriptedOpenAI) -> None:
    """Issue 37: a run on a worker thread (not the kernel's main thread, which a SIGINT
    wakes) waited for the server to answer before the abort took effect. Its connection is
    now closed: the run ends within 2 s of the abort and the server sees the close."""
    import threading
    import time

    from jupyter_agent.agents.run import last_run
    from tests.fakes.openai_server import hang

    server.enqueue(hang(30, then=text("too late")))
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.update(run=toolloop("Wait.")), daemon=True)
    worker.start()
    end = time.monotonic() + 10
    while not server.requests:
        assert time.monotonic() < end
        time.sleep(0.01)
    time.sleep(0.2)  # the request is out: the worker reads its answer
    t0 = time.monotonic()
    last_run().abort()  # type: ignore[union-attr]
    worker.join(5)
    assert not worker.is_alive() and time.monotonic() - t0 < 2.0
    assert box["run"].status == "aborted"
    end = time.monotonic() + 5
    while not server.hung_up:
        assert time.monotonic() < end, "the server never saw the connection closed"
        time.sleep(0.01)
    server.enqueue(text("fine"))  # the client is fine afterwards
    assert toolloop("Again.").answer == "fine"
