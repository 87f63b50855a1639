"""Hostile tool calls through the whole tool layer: each is refused or contained, as a tool
result the model reads, and nothing escapes the workspace or keeps running afterwards."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.tools.builtin import BUILTIN_TOOL_NAMES
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="checks /proc")]

SECRET = "TOP-SECRET-OUTSIDE-THE-WORKSPACE"


@pytest.fixture
def setup(workspace: Path) -> dict[str, Path]:
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (workspace / "link").symlink_to(outside, target_is_directory=True)
    (workspace / "ok.txt").write_text("inside")
    return {"outside": outside, "ws": workspace}


def _cases(outside: Path) -> list[tuple[str, str, dict[str, Any], str]]:
    """(id, tool, arguments, a phrase the refusal must contain)."""
    return [
        ("traversal-read", "read_file", {"path": "../outside/secret.txt"}, "escapes"),
        ("absolute-read", "read_file", {"path": str(outside / "secret.txt")}, "outside"),
        ("home-read", "read_file", {"path": "~/.bashrc"}, "'~'"),
        ("symlink-read", "read_file", {"path": "link/secret.txt"}, "symlink"),
        ("nul-read", "read_file", {"path": "ok.txt\u0000x"}, "NUL"),
        ("traversal-write", "write_file", {"path": "../outside/evil.txt", "content": "x"},
         "escapes"),
        ("absolute-write", "write_file", {"path": str(outside / "evil.txt"), "content": "x"},
         "outside"),
        ("symlink-write", "write_file", {"path": "link/evil.txt", "content": "x"}, "symlink"),
        ("traversal-search", "search_files", {"pattern": "SECRET", "path": ".."}, "escapes"),
        ("symlink-search", "search_files", {"pattern": "SECRET", "path": "link"}, "symlink"),
        ("traversal-glob", "glob_files", {"pattern": "../outside/*"}, "stay inside"),
        ("file-url", "web_fetch", {"url": "file:///etc/passwd"}, "http"),
        ("ftp-url", "web_fetch", {"url": "ftp://127.0.0.1/x"}, "http"),
    ]


def test_hostile_paths_are_refused_as_tool_results(server: ScriptedOpenAI,
                                                   setup: dict[str, Path]) -> None:
    cases = _cases(setup["outside"])
    server.enqueue(tool_calls([call(tool, args, id=cid) for cid, tool, args, _ in cases]),
                   text("done"))
    run = toolloop("probe", tools=list(BUILTIN_TOOL_NAMES), auto_approve=True)
    assert run.status == "done"  # every refusal went back to the model; the loop went on

    results = {m["tool_call_id"]: m["content"]
               for m in server.requests[1]["messages"] if m["role"] == "tool"}
    cards = {i["call_id"]: i for i in run.view["items"] if i["kind"] == "tool"}
    for cid, _tool, _args, phrase in cases:
        out = results[cid]
        assert SECRET not in out, cid
        assert cards[cid]["state"] == "error", (cid, out)
        assert phrase in out, (cid, out)
    assert SECRET not in json.dumps(server.requests)
    assert sorted(p.name for p in setup["outside"].iterdir()) == ["secret.txt"]  # nothing written


def _marker_processes(tag: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if tag in " ".join(p.info["cmdline"] or []):
                found.append(p)
        except psutil.Error:
            continue
    return found


def test_hostile_commands_are_contained(server: ScriptedOpenAI, setup: dict[str, Path]) -> None:
    tag = f"{os.getpid()}{time.monotonic_ns()}"
    cases = [
        ("flood", {"command": "echo FIRST; yes 0123456789 | head -c 20000000; echo; echo LAST"}),
        ("forever", {"command": "sleep 600; echo never", "timeout": 1}),
        ("orphan", {"command": f"(exec -a sleeper-{tag} sleep 300 &) ; echo started"}),
        ("cwd", {"command": "pwd"}),
    ]
    server.enqueue(tool_calls([call("bash", args, id=cid) for cid, args in cases]), text("ok"))
    run = toolloop("commands", tools=["bash"], auto_approve=True)
    assert run.status == "done"
    results = {m["tool_call_id"]: m["content"]
               for m in server.requests[1]["messages"] if m["role"] == "tool"}

    flood = results["flood"]
    assert flood.startswith("FIRST") and "LAST" in flood and len(flood) < 32_000
    assert "cut" in flood
    assert "timed out after 1 s" in results["forever"] and "never" not in results["forever"]
    assert results["orphan"].startswith("started")
    assert results["cwd"].splitlines()[0] == str(setup["ws"])
    deadline = time.monotonic() + 5
    while _marker_processes(f"sleeper-{tag}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marker_processes(f"sleeper-{tag}") == []  # the fork did not outlive the call
