"""The notebook tools reach a turn: ``%%toolloop --notebook``, ``Agent(notebook=True)``,
``--tools notebook``, ``--with NAME``; ``run_python`` behind an approval card that shows the
code; figures and proposed cells on the card; secrets and allow-lists hold."""

from __future__ import annotations

import json
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from jupyter_agent import Agent, toolloop
from jupyter_agent.agents.run import last_run
from jupyter_agent.base.errors import ParameterError
from jupyter_agent.view.bundle import build_bundle
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(120)

SECRET = "sk-proj-wiring-secret-0123456789"
NOTEBOOK = {"list_variables", "inspect_variable", "run_python", "read_notebook", "read_cells",
            "insert_cell"}


@pytest.fixture
def ip(shell: Any) -> Any:
    assert shell.run_cell("%load_ext jupyter_agent").success
    shell.user_ns.update(sales={"north": [10, 12], "south": [8, 15]}, API_KEY=SECRET)
    return shell


def offered(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


def cell(ip: Any, source: str) -> Any:
    with capture_output() as cap:
        result = ip.run_cell(source)
    return result, cap


def one_error(ip: Any, source: str) -> str:
    result, cap = cell(ip, source)
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    lines = [line for line in cap.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in cap.stderr + cap.stdout, cap.stderr
    return lines[0]


def test_notebook_flag_runs_code_after_approval(ip: Any, server: ScriptedOpenAI) -> None:
    code = "growth = {k: v[1] - v[0] for k, v in sales.items()}\nprint(growth)\nmax(growth, key=growth.get)"
    server.enqueue(tool_calls([call("list_variables", {}, id="c_list")]),
                   tool_calls([call("run_python", {"code": code}, id="c_run")]),
                   text("South grew fastest (+7)."))
    result, _ = cell(ip, "%%toolloop --notebook --history 0\nWhich region grew fastest?")
    assert result.success, result.error_in_exec
    run = ip.user_ns["_agent_run"]
    assert run.status == "ask" and "growth" not in ip.user_ns  # nothing ran before the click
    assert offered(server.requests[0]) >= NOTEBOOK
    ask = run.view["ask"]
    assert ask["question"] == "Run this code in the kernel?"
    assert ask["detail"]["code"] == code and ask["detail"]["display"] == {"code": "python"}
    listing = next(m["content"] for m in server.requests[1]["messages"]
                   if m.get("tool_call_id") == "c_list")
    assert "sales" in listing and "API_KEY" not in listing
    result, _ = cell(ip, f"%agent resume {run.run_id} --option 1")
    assert result.success, result.error_in_exec
    assert ip.user_ns["growth"] == {"north": 2, "south": 7}  # the namespace effect
    assert last_run().answer == "South grew fastest (+7)."
    out = next(m["content"] for m in server.requests[-1]["messages"]
               if m.get("tool_call_id") == "c_run")
    assert "{'north': 2, 'south': 7}" in out and "[result]\n'south'" in out
    # A second answer to the same card changes nothing.
    result, _ = cell(ip, f"%agent resume {run.run_id} --option 1")
    assert len(server.requests) == 3


def test_deny_leaves_the_namespace_alone(ip: Any, server: ScriptedOpenAI) -> None:
    server.enqueue(tool_calls([call("run_python", {"code": "wiped = True\nsales.clear()"},
                                    id="c_run")]),
                   text("I could not run it."))
    run = toolloop("Clear the data.", notebook=True, shell=ip, history=0)
    assert run.status == "ask"
    from jupyter_agent.agents.resume import Answer, resume

    resume(run.run_id, Answer("option", option_index=3), run=run)
    assert "wiped" not in ip.user_ns and ip.user_ns["sales"]["south"] == [8, 15]
    assert "Permission denied by the user: run_python was not run." in json.dumps(
        server.requests[-1]["messages"])


def test_a_read_only_agent_may_not_run_code(ip: Any, server: ScriptedOpenAI, tmp_path: Any) -> None:
    Agent("ro_analyst", notebook=True, read_only=True, workspace=str(tmp_path))
    server.enqueue(tool_calls([call("run_python", {"code": "touched = 1"}, id="c_run")]),
                   text("Denied."))
    run = toolloop("Touch.", agent="ro_analyst", shell=ip, store=None)
    assert run.status == "done" and "touched" not in ip.user_ns
    assert run.tool_calls[0]["error"].startswith("Permission denied by policy")


def test_notebook_variables_limit_what_the_agent_sees(ip: Any, server: ScriptedOpenAI) -> None:
    ip.user_ns["private_notes"] = "do not show"
    Agent("narrow", notebook=True, notebook_variables=["sales"])
    server.enqueue(tool_calls([call("list_variables", {}, id="c_list"),
                               call("inspect_variable", {"name": "private_notes"}, id="c_ins")]),
                   text("Only sales."))
    run = toolloop("What is there?", agent="narrow", shell=ip, store=None)
    assert run.status == "done"
    tools = offered(server.requests[0])
    assert "run_python" not in tools and "list_variables" in tools  # code could read anything
    body = json.dumps(server.requests[-1]["messages"])
    assert "do not show" not in body
    with pytest.raises(ParameterError, match="may not see the variable 'private_notes'"):
        toolloop("Look.", agent="narrow", shell=ip, store=None, context=["private_notes"])
    assert len(server.requests) == 2  # refused before any request


def test_with_puts_summaries_in_the_prompt_and_refuses_secrets(ip: Any,
                                                              server: ScriptedOpenAI) -> None:
    server.enqueue(text("North: 10 then 12."))
    result, _ = cell(ip, "%%chat --with sales --history 0\nSummarize my data.")
    assert result.success, result.error_in_exec
    user = server.requests[0]["messages"][-1]["content"]
    assert user.startswith("Summarize my data.\n\nNotebook variables given with this message:")
    assert "sales" in user and "north" in user
    assert len(server.requests[0].get("tools") or []) == 0  # no tool call needed
    line = one_error(ip, "%%toolloop --with API_KEY\nUse the key.")
    assert "secret" in line and SECRET not in line
    assert "missing_var" in one_error(ip, "%%chat --with missing_var\nHi.")
    assert "--with" in one_error(ip, "%%chat --with '1x'\nHi.")
    line = one_error(ip, "%%chat\nMy key is {API_KEY}.")
    assert line == "UsageError: {API_KEY} looks like a secret: it is never put into a prompt."
    assert len(server.requests) == 1 and SECRET not in json.dumps(server.requests)


def test_tools_by_name(ip: Any, server: ScriptedOpenAI) -> None:
    server.enqueue(text("ok"), text("ok"))
    assert cell(ip, "%%toolloop -t notebook --history 0\nGo.")[0].success
    assert offered(server.requests[0]) == NOTEBOOK
    assert cell(ip, "%%toolloop -t list_variables,read_cells --history 0\nGo.")[0].success
    assert offered(server.requests[1]) == {"list_variables", "read_cells"}
    assert "Notebook: notebook or list_variables" in one_error(
        ip, "%%toolloop -t notebooks\nGo.")
    with pytest.raises(ParameterError, match="a chat calls no tools"):
        from jupyter_agent import chat

        chat("Hi.", notebook=True)


def test_figures_and_proposals_reach_the_card_and_stay_small(ip: Any,
                                                            server: ScriptedOpenAI) -> None:
    pytest.importorskip("matplotlib")
    draw = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
            "for i in range(6):\n    plt.figure()\n    plt.plot([1, i])\n    plt.title(f'f{i}')")
    big = "x = 1\n" * 30_000  # 180,000 characters: over the proposal limit
    server.enqueue(tool_calls([call("run_python", {"code": draw}, id="c_draw")]),
                   tool_calls([call("insert_cell", {"source": big}, id="c_big"),
                               call("insert_cell", {"source": "plt.plot([1, 2])",
                                                    "explanation": "The chart."},
                                    id="c_cell")]),
                   text("Drawn; a cell is proposed."))
    run = toolloop("Draw.", notebook=True, shell=ip, store=None, auto_approve=True)
    assert run.status == "done", run.error
    card = next(i for i in run.view["items"] if i.get("call_id") == "c_draw")
    assert len(card["figures"]) == 6
    assert [bool(f["png"]) for f in card["figures"]] == [True] * 4 + [False] * 2
    assert all(f["description"].startswith("[figure") for f in card["figures"])
    assert card["figures"][0]["png"].startswith("iVBORw0KGg")
    big_card = next(i for i in run.view["items"] if i.get("call_id") == "c_big")
    assert big_card["state"] == "error" and "proposal" not in big_card
    assert [p["source"] for p in run.proposals] == ["plt.plot([1, 2])"]
    bundle = build_bundle(run.view)
    payload = json.dumps(bundle["application/vnd.jupyter-agent.run+json"])
    assert payload.count("iVBORw0KGg") == 4  # each kept PNG once, in the view
    assert "```python\nplt.plot([1, 2])\n```" in bundle["text/markdown"]
    assert "iVBORw0KGg" not in bundle["text/markdown"]


@pytest.mark.parametrize("vision", [True, False])
def test_a_model_that_accepts_images_sees_the_figure(ip: Any, server: ScriptedOpenAI,
                                                     vision: bool) -> None:
    pytest.importorskip("matplotlib")
    from jupyter_agent.llm.profiles import Capabilities, ModelProfile, register_profile

    register_profile(ModelProfile(name="eyes", model="eyes-1",
                                  capabilities=Capabilities(vision=vision)))
    draw = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
            "plt.plot([1, 3]); plt.title('up')")
    server.enqueue(tool_calls([call("run_python", {"code": draw}, id="c_draw")]),
                   text("It goes up."))
    run = toolloop("Draw.", notebook=True, shell=ip, model="eyes", history=0)
    assert run.status == "ask"
    from jupyter_agent.agents.resume import Answer, resume

    resume(run.run_id, Answer("option", option_index=1), run=run)  # approved: the resume path
    messages = server.requests[-1]["messages"]
    last = messages[-1]
    tool_at = next(i for i, m in enumerate(messages) if m.get("tool_call_id") == "c_draw")
    assert "[figure 1:" in messages[tool_at]["content"]  # every model reads the description
    if vision:
        assert tool_at == len(messages) - 2 and last["role"] == "user"
        parts = last["content"]
        assert parts[0]["type"] == "text" and len(parts) == 2
        assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGg")
    else:
        assert tool_at == len(messages) - 1
        assert "image_url" not in json.dumps(server.requests)


def test_plan_notebook_offers_the_tools(ip: Any, server: ScriptedOpenAI) -> None:
    from jupyter_agent.agents.plan import plan

    server.enqueue(text("Nothing to plan."), text("Nothing to plan."), text("Nothing to plan."))
    plan("Look at my data.", notebook=True, shell=ip, store=None, max_rounds=1)
    assert offered(server.requests[0]) >= NOTEBOOK


def test_figures_of_an_approved_call_survive_the_next_card_of_the_round(
        ip: Any, server: ScriptedOpenAI) -> None:
    """Two calls of one round wait on cards: the first draws a figure and is approved, the
    second's card follows. The figure still reaches a model that accepts images."""
    pytest.importorskip("matplotlib")
    from jupyter_agent.agents.resume import Answer, resume
    from jupyter_agent.llm.profiles import Capabilities, ModelProfile, register_profile

    register_profile(ModelProfile(name="eyes3", model="eyes-3",
                                  capabilities=Capabilities(vision=True)))
    draw = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
            "plt.plot([1, 3]); plt.title('up')")
    server.enqueue(tool_calls([call("run_python", {"code": draw}, id="c_draw"),
                               call("run_python", {"code": "print(2)"}, id="c_print")]),
                   text("It goes up."))
    run = toolloop("Draw.", notebook=True, shell=ip, model="eyes3", history=0)
    assert run.status == "ask"
    resume(run.run_id, Answer("option", option_index=1), run=run, expected_call_id="c_draw")
    assert run.status == "ask"  # the second card
    resume(run.run_id, Answer("option", option_index=1), run=run, expected_call_id="c_print")
    assert run.status == "done", run.error
    messages = server.requests[-1]["messages"]
    images = [p for m in messages if m["role"] == "user" and isinstance(m["content"], list)
              for p in m["content"] if p.get("type") == "image_url"]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png")
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ["c_draw", "c_print"]
