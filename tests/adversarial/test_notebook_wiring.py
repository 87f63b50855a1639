"""Hostile cases of the notebook tools in a turn: two code calls in one round, a resume in a
kernel that kept nothing, a model calling a tool it was not given, secrets in proposals and
printed output, a figure too large to keep. Each test checks what stayed safe."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_agent import Agent, toolloop
from jupyter_agent.agents.held import HELD
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.base.errors import ResumeError
from jupyter_agent.view.bundle import build_bundle
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(120)

SECRET = "sk-proj-hostile-notebook-0123456789"


@pytest.fixture
def ns() -> Iterator[Any]:
    """The test IPython shell (the running one), with what a test defined removed after."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython() or get_ipython()
    assert shell is not None
    before = set(shell.user_ns)
    shell.user_ns.update(data=[1, 2, 3])
    yield shell
    for name in set(shell.user_ns) - before:
        shell.user_ns.pop(name, None)


def test_two_code_calls_in_one_round_are_settled_one_card_at_a_time(
        ns: Any, server: ScriptedOpenAI) -> None:
    server.enqueue(tool_calls([call("run_python", {"code": "first = 1"}, id="c1"),
                               call("run_python", {"code": "second = 2"}, id="c2")]),
                   text("Done."))
    run = toolloop("Set two things.", notebook=True, shell=ns, history=0)
    assert run.status == "ask" and run.view["ask"]["detail"]["code"] == "first = 1"
    resume(run.run_id, Answer("option", option_index=1), run=run)
    assert ns.user_ns.get("first") == 1 and "second" not in ns.user_ns
    assert run.view["ask"]["detail"]["code"] == "second = 2"  # the next card shows its own code
    resume(run.run_id, Answer("option", option_index=3), run=run)  # deny the second
    assert "second" not in ns.user_ns and run.status == "done"
    # The same answer again changes nothing.
    with pytest.raises(ResumeError):
        resume(run.run_id, Answer("option", option_index=1), run=run)
    assert "second" not in ns.user_ns and len(server.requests) == 2


def test_a_resume_that_kept_no_tools_finds_them_by_name(ns: Any, server: ScriptedOpenAI) -> None:
    """A new kernel keeps no tool objects: run_python is rebuilt by name on the running shell."""
    server.enqueue(tool_calls([call("run_python", {"code": "rebuilt = sum(data)"}, id="c1")]),
                   text("6."))
    run = toolloop("Sum.", notebook=True, shell=ns, history=0)
    assert run.status == "ask"
    HELD.clear()
    resume(run.run_id, Answer("option", option_index=1))
    assert ns.user_ns["rebuilt"] == 6


def test_a_tool_the_agent_was_not_given_is_not_run(ns: Any, server: ScriptedOpenAI) -> None:
    Agent("peek", notebook=True, notebook_variables=["data"])
    server.enqueue(tool_calls([call("run_python", {"code": "escaped = True"}, id="c1")]),
                   text("I cannot run code."))
    run = toolloop("Run code.", agent="peek", shell=ns, store=None)
    assert run.status == "done" and "escaped" not in ns.user_ns
    assert run.tool_calls[0]["output"].startswith('Unknown tool "run_python"')


def test_secrets_never_reach_the_card_the_bundle_or_the_model(ns: Any,
                                                              server: ScriptedOpenAI) -> None:
    ns.user_ns["API_KEY"] = SECRET
    server.enqueue(tool_calls([call("run_python", {"code": "print(API_KEY)"}, id="c1"),
                               call("insert_cell", {"source": f"API_KEY = '{SECRET}'\nuse()"},
                                    id="c2")]),
                   text("Done."))
    run = toolloop("Show the key.", notebook=True, shell=ns, store=None, auto_approve=True)
    assert run.status == "done"
    assert run.proposals[0]["source"] == "API_KEY = [redacted]\nuse()"
    bundle = build_bundle(run.view)
    assert SECRET not in json.dumps(bundle)
    # What we send the model (tool results, prompts) never holds it; only the model's own
    # arguments, echoed back as its message, can (it wrote them).
    sent = [m for m in server.requests[-1]["messages"] if m["role"] != "assistant"]
    assert SECRET not in json.dumps(sent)
    assert "[redacted]" in run.tool_calls[0]["output"]


def test_a_figure_too_large_to_keep_is_described_not_shown(ns: Any,
                                                           server: ScriptedOpenAI) -> None:
    pytest.importorskip("matplotlib")
    from jupyter_agent.llm.profiles import Capabilities, ModelProfile, register_profile

    register_profile(ModelProfile(name="eyes2", model="eyes-2",
                                  capabilities=Capabilities(vision=True)))
    noise = ("import numpy as np, matplotlib\nmatplotlib.use('Agg')\n"
             "import matplotlib.pyplot as plt\n"
             "plt.figure(figsize=(12, 12), dpi=100)\n"
             "plt.imshow(np.random.default_rng(0).random((600, 600, 3)))")
    server.enqueue(tool_calls([call("run_python", {"code": noise}, id="c1")]), text("Noise."))
    run = toolloop("Draw noise.", notebook=True, shell=ns, store=None, auto_approve=True,
                   model="eyes2")
    assert run.status == "done", run.error
    fig = next(i for i in run.view["items"] if i["kind"] == "tool")["figures"][0]
    assert fig["png"] == "" and fig["description"].startswith("[figure 1:")
    assert "image_url" not in json.dumps(server.requests)  # nothing unbounded to the model
    assert fig["description"] in json.dumps(server.requests[-1]["messages"])
