"""Agent skills (docs/behaviour.md §5.5): folders in the Agent Skills layout, only names and
descriptions in the prompt, the full text read on demand with ``read_skill``; hostile folders.

End to end through ``toolloop()``/``plan()``, the magics and the scripted server; the tool
itself on real folders (symlinks, huge and binary files, broken front matter).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from IPython.utils.capture import capture_output

from jupyter_agent import Agent, toolloop
from jupyter_agent.base.errors import ParameterError
from jupyter_agent.tools.skills import (
    MAX_SKILL_FILE_CHARS,
    load_skills,
    read_skill_tool,
    skills_prompt,
)
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

SECRET = "sk-proj-skill-secret-0123456789abcdef"
BODY = "Step 1: group by region.\nStep 2: write one line per region, biggest change first."


def make_skill(root: Path, name: str, description: str = "Write the team's sales report.",
               body: str = BODY, files: dict[str, str] | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n"
                                     f"{body}\n")
    for rel, content in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(content)
    return folder


def offered(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


@pytest.fixture(scope="module")
def ipshell() -> Any:
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython() or get_ipython()  # None when another test started it already
    assert shell is not None
    return shell


# ------------------------------------------------------------------ end to end
def test_names_in_the_prompt_full_text_read_on_demand(tmp_path: Path,
                                                      server: ScriptedOpenAI) -> None:
    make_skill(tmp_path / "skills", "sales-report",
               files={"templates/report.md": "# Sales report\n{lines}"})
    make_skill(tmp_path / "skills", "chart-style", description="House style for charts.",
               body="Never use pie charts.")
    server.enqueue(tool_calls([call("read_skill", {"name": "sales-report"})]),
                   tool_calls([call("read_skill", {"name": "sales-report",
                                                   "path": "templates/report.md"})]),
                   text("Report written."))
    run = toolloop("Write the Q4 report.", skills=str(tmp_path / "skills"), tools=[])
    assert run.status == "done", run.error
    first = server.requests[0]
    system = first["messages"][0]["content"]
    assert "- sales-report: Write the team's sales report." in system
    assert "- chart-style: House style for charts." in system
    assert "Step 1" not in system and "pie charts" not in system  # only names, descriptions
    assert offered(first) == {"read_skill"}
    skill_text, template = tool_results(server.requests[2])
    assert skill_text.startswith("---\nname: sales-report") and "Step 2:" in skill_text
    assert "- templates/report.md" in skill_text  # the files of the skill are listed
    assert template == "# Sales report\n{lines}"


def test_an_agent_carries_its_skills_and_a_cell_adds_more(tmp_path: Path,
                                                          server: ScriptedOpenAI,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    make_skill(tmp_path / "a", "alpha")
    make_skill(tmp_path / "b", "beta")
    monkeypatch.chdir(tmp_path)
    agent = Agent("skilled", instructions="Be useful.", skills="a")  # relative: fixed now
    monkeypatch.chdir("/")
    assert agent.skills == [str(tmp_path / "a")]
    server.default = text("ok")
    toolloop("Go.", agent=agent, tools=[], skills=[str(tmp_path / "b")])
    system = server.requests[-1]["messages"][0]["content"]
    assert "- alpha:" in system and "- beta:" in system


def test_skills_flag_on_the_magics(ipshell: Any, tmp_path: Path,
                                                  server: ScriptedOpenAI) -> None:
    make_skill(tmp_path / "skills", "sales-report")
    assert ipshell.run_cell("%load_ext jupyter_agent").success
    server.default = text("ok")
    with capture_output():
        result = ipshell.run_cell(f"%%toolloop --skills {tmp_path / 'skills'} --no-history\n"
                                  "Report.")
    assert result.error_in_exec is None, result.error_in_exec
    assert "- sales-report:" in server.requests[-1]["messages"][0]["content"]
    # A folder that is not there: one line naming the flag and the folder, nothing asked.
    asked = len(server.requests)
    with capture_output() as cap:
        result = ipshell.run_cell(f"%%toolloop --skills {tmp_path / 'gone'}\nReport.")
    assert str(result.error_in_exec) == f"--skills: {tmp_path / 'gone'}: no such folder."
    assert "Traceback" not in cap.stderr and len(server.requests) == asked
    # A chat calls no tools: the flag is not offered there.
    with capture_output():
        result = ipshell.run_cell(f"%%chat --skills {tmp_path / 'skills'}\nHi.")
    assert result.error_in_exec is not None and "--skills" in str(result.error_in_exec)


def test_a_resumed_run_reads_its_skills_again(tmp_path: Path, server: ScriptedOpenAI) -> None:
    from jupyter_agent import tool
    from jupyter_agent.agents.held import HELD
    from jupyter_agent.agents.resume import Answer, resume

    @tool(requires_approval=True)
    def guarded() -> str:
        """Guarded."""
        return "g"

    make_skill(tmp_path / "skills", "sales-report")
    server.enqueue(tool_calls([call("guarded", {})]),
                   tool_calls([call("read_skill", {"name": "sales-report"})]), text("done"))
    run = toolloop("Go.", skills=str(tmp_path / "skills"), tools=["guarded"])
    assert run.status == "ask"
    HELD.clear()  # as in another kernel: the tools are rebuilt from the saved state
    resumed = resume(run.run_id, Answer("option", option_index=1))
    assert resumed.status == "done", resumed.error
    assert "Step 1" in tool_results(server.requests[-1])[-1]


# ------------------------------------------------------------------ hostile folders
def test_path_traversal_and_absolute_paths_are_refused(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "sales-report")
    (tmp_path / "outside.txt").write_text(SECRET)
    read = read_skill_tool(load_skills([tmp_path / "skills"]))
    for path in ("../../outside.txt", "../sales-report/../../outside.txt",
                 str(tmp_path / "outside.txt"), "~/.ssh/id_rsa"):
        r = read.invoke(f'{{"name": "sales-report", "path": "{path}"}}')
        assert r.error and r.output.startswith("Tool error: ToolError: sales-report:"), r.output
        assert SECRET not in r.output


def test_a_symlink_out_of_the_skill_folder_is_not_followed(tmp_path: Path) -> None:
    folder = make_skill(tmp_path / "skills", "sales-report")
    (tmp_path / "private.txt").write_text(SECRET)
    os.symlink(tmp_path / "private.txt", folder / "notes.md")
    os.symlink(tmp_path, folder / "up")
    read = read_skill_tool(load_skills([tmp_path / "skills"]))
    for path in ("notes.md", "up/private.txt"):
        r = read.invoke(f'{{"name": "sales-report", "path": "{path}"}}')
        assert r.error and SECRET not in r.output, r.output
    listing = read.invoke('{"name": "sales-report"}').output
    assert "private" not in listing  # a symlinked folder is not walked


def test_a_huge_file_is_cut_and_a_binary_one_refused(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "sales-report",
               files={"big.txt": "x" * (MAX_SKILL_FILE_CHARS * 10)})
    (tmp_path / "skills" / "sales-report" / "blob.bin").write_bytes(b"\x00\x01" * 100)
    read = read_skill_tool(load_skills([tmp_path / "skills"]))
    big = read.invoke('{"name": "sales-report", "path": "big.txt"}').output
    assert len(big) < MAX_SKILL_FILE_CHARS + 200 and big.endswith("the rest was not read]")
    blob = read.invoke('{"name": "sales-report", "path": "blob.bin"}')
    assert blob.error and "binary" in blob.output


def test_skill_text_is_secret_masked(tmp_path: Path, server: ScriptedOpenAI,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILL_SERVICE_TOKEN", SECRET)
    make_skill(tmp_path / "skills", "sales-report", body=f"Use the token {SECRET}.")
    read = read_skill_tool(load_skills([tmp_path / "skills"]))
    assert SECRET not in read.invoke('{"name": "sales-report"}').output
    server.enqueue(tool_calls([call("read_skill", {"name": "sales-report"})]), text("ok"))
    toolloop("Go.", skills=str(tmp_path / "skills"), tools=[])
    assert SECRET not in str(server.requests[-1]["messages"][1:])


def test_an_unknown_skill_name_lists_the_known_ones(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "sales-report")
    r = read_skill_tool(load_skills([tmp_path / "skills"])).invoke('{"name": "nope"}')
    assert r.output == "Tool error: ToolError: No skill named 'nope'; skills: sales-report."


@pytest.mark.parametrize("content,why", [
    ("no front matter here\n", "has no front matter"),
    ("---\nname: a-b\ndescription: x\n", "never ends"),
    ("---\ndescription: x\n---\n", "has no name:"),
    ("---\nname: Sales Report\ndescription: x\n---\n", "lowercase letters"),
    ("---\nname: a-b\n---\n", "has no description:"),
    ("", "has no front matter"),
])
def test_broken_front_matter_is_one_line_naming_the_file(tmp_path: Path, content: str,
                                                         why: str) -> None:
    folder = tmp_path / "skills" / "broken"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(content)
    with pytest.raises(ParameterError) as err:
        load_skills([tmp_path / "skills"])
    message = str(err.value)
    assert message.startswith("skills: ") and why in message and "\n" not in message
    assert "SKILL.md" in message


def test_duplicate_names_and_missing_folders_are_refused(tmp_path: Path,
                                                        server: ScriptedOpenAI) -> None:
    make_skill(tmp_path / "one", "same")
    make_skill(tmp_path / "two", "same")
    with pytest.raises(ParameterError, match="the name 'same' is taken by"):
        load_skills([tmp_path / "one", tmp_path / "two"])
    with pytest.raises(ParameterError, match="no such folder"):
        toolloop("Go.", skills=str(tmp_path / "missing"), tools=[])
    with pytest.raises(ParameterError, match="neither a skill folder"):
        load_skills([tmp_path])
    assert not server.requests  # refused before any request


def test_multiline_description_and_quotes(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "SKILL.md").write_text('---\nname: "quoted-name"\ndescription: >\n  Two lines\n'
                                     '  of text.\nlicense: MIT\n---\nBody\n')
    (skill,) = load_skills([folder])
    assert (skill.name, skill.description) == ("quoted-name", "Two lines of text.")
    assert skills_prompt([skill]).endswith("- quoted-name: Two lines of text.")


def test_the_planning_agent_lists_skills_too(tmp_path: Path, server: ScriptedOpenAI) -> None:
    from jupyter_agent.agents.plan.agent import plan

    make_skill(tmp_path / "skills", "sales-report")
    server.default = text("ok")
    plan("Write the report.", skills=str(tmp_path / "skills"), tools=[])
    first = server.requests[0]
    assert "- sales-report: Write the team's sales report." in first["messages"][0]["content"]
    assert "read_skill" in offered(first) and "Step 1" not in str(first["messages"])
