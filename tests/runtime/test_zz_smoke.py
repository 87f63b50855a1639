from tests.fakes.openai_server import call, text, tool_calls
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.session import default_store

def test_smoke(server, workspace):
    server.enqueue(tool_calls([call("bash", {"command": "echo hi > f.txt; echo made"}, id="c1"),
                               call("glob_files", {"pattern": "*"}, id="c2")]),
                   text("All done."))
    run = toolloop("make a file", tools=["bash", "glob_files"], stream=True)
    print(run.status, run.pending and run.pending["ask"])
    print([ (m["role"], m.get("content")) for m in run.messages])
    assert run.status == "ask"
    run2 = resume(run.run_id, Answer("option", option_index=3), run=run)
    print(run2.status, run2.answer)
    print(server.requests[-1]["messages"])
    print(default_store().get_messages("default"))
    print(default_store().list_turns("default"))
