"""Runs exported as OpenTelemetry GenAI spans to a real receiver, and read back from it.

A local Arize Phoenix server (``tests/fakes/phoenix.py``) is started once for this module; each
test exports to it through ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``%agent trace URL`` and reads
the spans back through Phoenix's REST API: names, parent links, token counts, tool spans, a
plan that asks and is resumed (the same trace, in a new process state), a batch of 20 items,
a sub-agent under its tool call, and contents only when asked for (masked).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.fakes.phoenix import PHOENIX_BIN, Phoenix

pytestmark = [pytest.mark.receiver, pytest.mark.timeout(300)]

if not PHOENIX_BIN.exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"no OTLP receiver at {PHOENIX_BIN}: `make test` installs it")
    pytest.skip(f"no Phoenix at {PHOENIX_BIN} (make test installs it in .venv-otel)",
                allow_module_level=True)

Spans = list[dict[str, Any]]


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    server = Phoenix(tmp_path_factory.mktemp("phoenix")).start()
    yield server
    server.stop()


@pytest.fixture
def traced(phoenix: Phoenix, monkeypatch: pytest.MonkeyPatch) -> Phoenix:
    """Every run of the test is exported to Phoenix (the environment variable's way)."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.base_url)
    return phoenix


def flush() -> None:
    from jupyter_agent.tracing.export import current

    ex = current()
    assert ex is not None, "nothing was exported"
    assert ex.flush(60)  # sent in the background: a loaded machine may be slow
    assert ex.health.up, ex.health.last_error


def by_trace(spans: Spans, trace_id: str) -> Spans:
    return [s for s in spans if s["context"]["trace_id"] == trace_id]


def run_span(spans: Spans, run_id: str) -> dict[str, Any]:
    found = [s for s in spans if s["attributes"].get("jupyter_agent.run.id") == run_id
             and s["name"].startswith("invoke_agent ")]
    assert found, f"no span of run {run_id}"
    return found[0]


def children(spans: Spans, parent: dict[str, Any]) -> Spans:
    pid = parent["context"]["span_id"]
    return sorted((s for s in spans if s["parent_id"] == pid), key=lambda s: s["start_time"])


def have(run_id: str, count: int) -> Callable[[Spans], bool]:
    """``count`` spans in the trace of run ``run_id``."""
    def check(spans: Spans) -> bool:
        roots = [s for s in spans if s["attributes"].get("jupyter_agent.run.id") == run_id]
        return bool(roots) and len(by_trace(spans, roots[0]["context"]["trace_id"])) >= count
    return check


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


# --------------------------------------------------------------------------- %%toolloop
def test_a_toolloop_with_two_tool_calls(traced: Phoenix, server: ScriptedOpenAI) -> None:
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    ip = start_ipython() or get_ipython()
    assert ip is not None
    ip.run_cell("%load_ext jupyter_agent")
    server.enqueue(
        tool_calls([call("add", {"a": 17, "b": 25}, id="c_add"),
                    call("mul", {"a": 6, "b": 7}, id="c_mul")], usage=usage(120, 15)),
        text("42 and 42.", usage=usage(160, 6)))
    with capture_output() as cap:
        # `%agent trace URL` wins over the environment (the fixture's variable is there too).
        assert ip.run_cell(f"%agent trace {traced.base_url}").success
        ip.run_cell("from jupyter_agent import tool\n"
                    "@tool\ndef add(a: int, b: int) -> int:\n    'Add.'\n    return a + b\n"
                    "@tool\ndef mul(a: int, b: int) -> int:\n    'Multiply.'\n    return a * b\n")
        result = ip.run_cell("%%toolloop --tools add,mul\nWhat are 17+25 and 6*7?")
    assert result.success, cap.stderr
    run = ip.user_ns["_agent_run"]
    assert run.status == "done"
    assert "Traces: every run is exported to " + traced.base_url + "/v1/traces" in cap.stdout
    flush()

    spans = traced.wait_for(have(run.run_id, 5))
    root = run_span(spans, run.run_id)
    trace = by_trace(spans, root["context"]["trace_id"])
    assert len(trace) == 5 and root["parent_id"] is None
    attrs = root["attributes"]
    assert root["name"] == "invoke_agent toolloop"
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.agent.name"] == "toolloop"
    assert attrs["jupyter_agent.run.status"] == "done"
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (280, 21)
    assert attrs["jupyter_agent.cost"] == pytest.approx(run.cost)
    assert attrs["gen_ai.conversation.id"] == run.session

    kids = children(trace, root)
    assert [s["name"] for s in kids] == ["chat gpt-4.1-mini", "execute_tool add",
                                         "execute_tool mul", "chat gpt-4.1-mini"]
    chat1, add, mul, chat2 = kids
    for chat, (tin, tout), finish in ((chat1, (120, 15), "tool_calls"), (chat2, (160, 6), "stop")):
        a = chat["attributes"]
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.request.model"] == "gpt-4.1-mini"
        assert a["gen_ai.response.model"] == "gpt-4.1-mini"  # what the server said answered
        assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (tin, tout)
        assert a["gen_ai.response.finish_reasons"] == [finish]
    ids = [c["call_id"] for c in run.tool_calls]
    for span, name, cid in ((add, "add", ids[0]), (mul, "mul", ids[1])):
        a = span["attributes"]
        assert a["gen_ai.operation.name"] == "execute_tool"
        assert (a["gen_ai.tool.name"], a["gen_ai.tool.call.id"]) == (name, cid)
        assert "error.type" not in a and span["status_code"] != "ERROR"
        # Contents were not asked for: none in any span.
        assert "gen_ai.tool.call.arguments" not in a and "gen_ai.tool.call.result" not in a
    assert not any("gen_ai.input.messages" in s["attributes"] or
                   "gen_ai.output.messages" in s["attributes"] for s in trace)
    # The tool spans sit between the two requests.
    assert chat1["end_time"] <= add["start_time"] and mul["end_time"] <= chat2["start_time"]

    with capture_output() as cap:
        ip.run_cell("%agent trace off")
        ip.run_cell("%agent trace")
    assert "Traces: off (turned off with `%agent trace off`)." in cap.stdout


# --------------------------------------------------------------------------- %%plan, resumed
def test_a_plan_that_asks_and_is_resumed_in_a_new_process_state(
        traced: Phoenix, server: ScriptedOpenAI, tmp_path: Path) -> None:
    from jupyter_agent.agents.plan import plan
    from jupyter_agent.agents.resume import Answer, resume
    from jupyter_agent.base.state import STATE
    from jupyter_agent.session import Store
    from tests.agents.plan.plan_scripts import ask, set_plan, step_done

    server.enqueue(tool_calls([call("update_plan", set_plan("1"), id="p1")], usage=usage(50, 5)),
                   tool_calls([call("ask_agent", ask("Which database?"), id="a1")],
                              usage=usage(60, 6)))
    with Store(tmp_path / "s.sqlite3") as store:
        run = plan("Plan the migration.", store=store, tools=[])
        assert run.status == "ask"
        run_id = run.run_id
    flush()
    # A new kernel: nothing in memory, the run rebuilt from the store.
    STATE.reset()
    server.enqueue(tool_calls([call("update_plan", step_done("1"), id="p2")], usage=usage(70, 7)),
        text("Migrated to B.", usage=usage(80, 8)))
    with Store(tmp_path / "s.sqlite3") as store:
        done = resume(run_id, Answer("option", option_index=2), store=store)
    assert done.status == "done", done.error
    flush()

    spans = traced.wait_for(have(run_id, 9))
    parts = sorted((s for s in spans if s["attributes"].get("jupyter_agent.run.id") == run_id),
                   key=lambda s: s["start_time"])
    assert [s["name"] for s in parts] == ["invoke_agent plan", "invoke_agent plan"]
    first, second = parts
    # The same trace, continued: the resumed part is a child of the part that asked.
    assert second["context"]["trace_id"] == first["context"]["trace_id"]
    assert second["parent_id"] == first["context"]["span_id"] and first["parent_id"] is None
    assert first["attributes"]["jupyter_agent.run.status"] == "ask"
    assert second["attributes"]["jupyter_agent.run.status"] == "done"
    assert second["attributes"]["jupyter_agent.run.resumed"] is True
    asked = [e for e in first["events"] if e["name"] == "jupyter_agent.ask_pending"]
    assert len(asked) == 1
    assert asked[0]["attributes"]["gen_ai.tool.call.id"] == "a1"
    assert asked[0]["attributes"]["jupyter_agent.ask.options"] == 3
    assert "jupyter_agent.ask.question" not in asked[0]["attributes"]  # content: not opted in
    answered = [e for e in second["events"] if e["name"] == "jupyter_agent.ask_answered"]
    assert answered[0]["attributes"]["jupyter_agent.ask.option"] == 2
    trace = by_trace(spans, first["context"]["trace_id"])
    assert [s["name"] for s in children(trace, first)] == [
        "chat gpt-4.1-mini", "execute_tool update_plan", "chat gpt-4.1-mini",
        "execute_tool ask_agent", "invoke_agent plan"]
    assert [s["name"] for s in children(trace, second)] == [
        "chat gpt-4.1-mini", "execute_tool update_plan", "chat gpt-4.1-mini"]
    tokens = [s["attributes"]["gen_ai.usage.input_tokens"] for s in trace
              if s["name"].startswith("chat ")]
    assert sorted(tokens) == [50, 60, 70, 80]


# --------------------------------------------------------------------------- a batch
def test_a_batch_of_20_items_is_one_span_with_a_child_per_item(
        traced: Phoenix, server: ScriptedOpenAI) -> None:
    from jupyter_agent import batch

    server.default = text("ok", usage=usage(9, 1))
    result = batch("Say ok to {item}.", [f"row {i}" for i in range(20)], kind="chat",
                   concurrency=4, store=None)
    assert [o["status"] for o in result.outcomes] == ["done"] * 20
    run_ids = {o["run_id"] for o in result.outcomes}
    flush()

    def complete(spans: Spans) -> bool:
        return sum(s["name"] == "chat gpt-4.1-mini" and
                   s["attributes"].get("gen_ai.usage.input_tokens") == 9 for s in spans) >= 20 \
            and any(s["attributes"].get("jupyter_agent.batch.items") == 20 for s in spans)

    spans = traced.wait_for(complete)
    batches = [s for s in spans if s["name"] == "batch chat"
               and s["attributes"]["jupyter_agent.batch.items"] == 20]
    assert len(batches) == 1
    top = batches[0]
    assert top["parent_id"] is None
    assert top["attributes"]["jupyter_agent.batch.items"] == 20
    assert top["attributes"]["jupyter_agent.batch.status"] == "done"
    items = children(spans, top)
    assert len(items) == 20 and {s["name"] for s in items} == {"invoke_agent chat"}
    assert {s["attributes"]["jupyter_agent.run.id"] for s in items} == run_ids
    for item in items:  # each item's own subtree: its one model request
        (chat,) = children(spans, item)
        assert chat["name"] == "chat gpt-4.1-mini"
        assert chat["attributes"]["gen_ai.usage.output_tokens"] == 1


# --------------------------------------------------------------------------- sub-agents
def test_a_sub_agent_is_nested_under_its_tool_call_and_contents_are_masked(
        traced: Phoenix, server: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    from jupyter_agent import Agent, toolloop
    from jupyter_agent.base.secrets import register_secret

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    secret = "sk-live-TRACEDSECRET0123456789"
    register_secret(secret)
    researcher = Agent("researcher", instructions="You research facts.", tools=[])
    server.enqueue(
        tool_calls([call("researcher", {"task": f"Look up {secret}"}, id="call_r")]),
        text("Paris."),                         # the sub-agent answers
        text(f"The capital is Paris. {secret}"))
    run = toolloop(f"Capital of France? My key is {secret}",
                   tools=[researcher.as_tool(requires_approval=False)])
    assert run.status == "done"
    flush()

    spans = traced.wait_for(have(run.run_id, 6))
    root = run_span(spans, run.run_id)
    trace = by_trace(spans, root["context"]["trace_id"])
    (tool,) = [s for s in children(trace, root) if s["name"] == "execute_tool researcher"]
    (sub,) = children(trace, tool)
    assert sub["name"] == "invoke_agent toolloop"
    assert sub["attributes"]["jupyter_agent.run.id"] != run.run_id
    assert [s["name"] for s in children(trace, sub)] == ["chat gpt-4.1-mini"]
    # Contents were asked for: there, and masked like everywhere else.
    dumped = json.dumps(trace)
    assert secret not in dumped
    prompt = json.loads(root["attributes"]["gen_ai.input.messages"])
    assert prompt[0]["role"] == "user" and "My key is" in prompt[0]["parts"][0]["content"]
    assert "Look up" in tool["attributes"]["gen_ai.tool.call.arguments"]
    assert tool["attributes"]["gen_ai.tool.call.result"] == "Paris."
    answer = json.loads(root["attributes"]["gen_ai.output.messages"])
    assert answer[0]["parts"][0]["content"].startswith("The capital is Paris.")


# --------------------------------------------------------------------------- a batch on Dask
def test_a_batch_on_dask_workers_hangs_under_the_kernels_batch_span(
        traced: Phoenix, server: ScriptedOpenAI) -> None:
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    from jupyter_agent import batch

    server.default = text("ok", usage=usage(13, 2))
    # Started after the server and the variable: the workers see both (and nothing else:
    # `%agent trace URL` would reach them the same way, in each item's task).
    cluster = LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    try:
        result = batch("Say ok to {item}.", [f"row {i}" for i in range(4)], kind="chat",
                       engine="dask", concurrency=4, store=None)
    finally:
        client.close()
        cluster.close()
    assert [o["status"] for o in result.outcomes] == ["done"] * 4
    flush()

    def batch_spans(spans: Spans) -> list[dict[str, Any]]:
        return [s for s in spans if s["name"] == "batch chat"
                and s["attributes"].get("jupyter_agent.batch.items") == 4]

    def complete(spans: Spans) -> bool:
        # The kernel's span and the workers' come from different processes: the receiver
        # may store one export before the other, so wait for both.
        return batch_spans(spans) != [] and sum(
            s["attributes"].get("gen_ai.usage.input_tokens") == 13
            and s["name"].startswith("chat ") for s in spans) >= 4

    spans = traced.wait_for(complete)
    (top,) = batch_spans(spans)
    items = children(spans, top)
    assert len(items) == 4 and {s["name"] for s in items} == {"invoke_agent chat"}
    assert {s["attributes"]["jupyter_agent.run.id"] for s in items} == {
        o["run_id"] for o in result.outcomes}
