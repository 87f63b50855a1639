"""Issue 35: the skills listing has a cap on count and characters (3,000 skills made a
3.1 MB system prompt); the run says what was left out and how to name one."""

from __future__ import annotations

from pathlib import Path

from jupyter_agent import toolloop
from jupyter_agent.tools.skills import MAX_SKILLS_LISTED, MAX_SKILLS_PROMPT_CHARS
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls


def make_skills(root: Path, n: int, description: str) -> None:
    for i in range(n):
        folder = root / f"skill-{i:04d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: skill-{i:04d}\ndescription: "
                                         f"{description}\n---\nDo step {i}.\n")


def _warnings(run: object) -> list[str]:
    return [e["message"] for e in run.events_json()  # type: ignore[attr-defined]
            if e.get("type") == "warning"]


def test_three_thousand_skills_make_a_bounded_prompt_and_say_what_was_left_out(
        tmp_path: Path, server: ScriptedOpenAI) -> None:
    make_skills(tmp_path / "many", 3000, "x" * 1000)  # 3 MB of descriptions
    (tmp_path / "mine").mkdir()
    make_skills(tmp_path / "mine", 1, "My own skill, named by its folder.")
    own = tmp_path / "mine" / "skill-0000"
    (own / "SKILL.md").write_text("---\nname: my-own\ndescription: Mine.\n---\nMine.\n")
    server.enqueue(tool_calls([call("read_skill", {"name": "skill-2999"})]), text("ok"))
    run = toolloop("Go.", skills=[str(tmp_path / "many"), str(own)], tools=[])
    assert run.status == "done", run.error
    system = server.requests[0]["messages"][0]["content"]
    assert len(system) < MAX_SKILLS_PROMPT_CHARS + 2_000
    assert "- my-own: Mine." in system  # named by its own folder: listed first
    assert "skill-2999" not in system
    assert "more skills are installed but not listed" in system
    # A skill left out of the listing is still read by name.
    assert "Do step 2999." in [m["content"] for m in server.requests[1]["messages"]
                               if m["role"] == "tool"][0]
    (line,) = [w for w in _warnings(run) if w.startswith("skills:")]
    assert "\n" not in line and "of 3001 skills are not listed" in line
    assert "--skills" in line and len(line) < 500


def test_the_count_cap_holds_for_short_descriptions(tmp_path: Path,
                                                    server: ScriptedOpenAI) -> None:
    make_skills(tmp_path / "many", MAX_SKILLS_LISTED + 7, "Short.")
    server.enqueue(text("ok"))
    run = toolloop("Go.", skills=str(tmp_path / "many"), tools=[])
    system = server.requests[0]["messages"][0]["content"]
    assert system.count(": Short.") == MAX_SKILLS_LISTED
    assert any("7 of 107 skills are not listed" in w for w in _warnings(run))


def test_a_few_skills_are_all_listed_without_a_notice(tmp_path: Path,
                                                      server: ScriptedOpenAI) -> None:
    make_skills(tmp_path / "few", 3, "Short.")
    server.enqueue(text("ok"))
    run = toolloop("Go.", skills=str(tmp_path / "few"), tools=[])
    assert server.requests[0]["messages"][0]["content"].count(": Short.") == 3
    assert not [w for w in _warnings(run) if w.startswith("skills:")]
