"""The bash sandbox, attacked: what a command run by a hostile (or confused) model can reach.

With bubblewrap: the workspace is the only writable place, the system is read-only, there is no
home folder, the kernel's processes and environment are invisible, nothing outlives the call and
the network is cut off unless the agent allows it. Without it (hidden from ``PATH`` or turned
off), every place the user decides (tool description, approval card) says bash is NOT confined.
Secret-looking environment variables never reach a command, sandboxed or not.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from jupyter_agent import Agent, python_sandbox, toolloop
from jupyter_agent.base.errors import ConfigError, ToolError
from jupyter_agent.llm.types import ToolCall
from jupyter_agent.runtime import agents
from jupyter_agent.runtime.policy import approval_ask
from jupyter_agent.tools.builtin import Workspace, make_builtin_functions, sandbox_status
from jupyter_agent.tools.builtin.shell import run_command
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls
from tests.fakes.processes import running_with

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux only (bubblewrap, /proc)"),
]

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap is not installed (apt-get install bubblewrap)")

SECRETS = {
    "GITHUB_TOKEN": "ghp_sandboxtest_0123456789abcdef",
    "AWS_SECRET_ACCESS_KEY": "aws-sandboxtest-0123456789abcdef",
    "HF_TOKEN": "hf_sandboxtest_0123456789abcdef",
    "DB_PASSWORD": "db-sandboxtest-0123456789abcdef",
    "OPENAI_API_KEY": "sk-sandboxtest-0123456789abcdef",
}


@pytest.fixture
def secrets_in_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "visible-value")
    return SECRETS


@pytest.fixture
def sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUPYTER_AGENT_SANDBOX", raising=False)
    status = sandbox_status()
    assert status.confined, f"bubblewrap is installed but unusable here: {status.reason}"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def bash_in(root: Path, *, allow_network: bool = False):  # noqa: ANN201 - a bound tool
    return make_builtin_functions(Workspace(root, allow_network=allow_network))["bash"]




# ------------------------------------------------------------------ with bubblewrap


@needs_bwrap
def test_from_slash_only_the_sandbox_is_visible(sandboxed: None, ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE-SECRET\n")
    out = bash_in(ws)(f"cd /; ls /; cat {outside}/secret.txt; echo PARENT:; ls {tmp_path}; "
                      "head -1 /etc/passwd")
    assert "OUTSIDE-SECRET" not in out
    assert f"cat: {outside}/secret.txt: No such file or directory" in out
    top = set(out.split("PARENT:")[0].split("\n"))
    assert "home" not in top and "root" not in top and {"proc", "usr", "etc", "tmp"} <= top
    assert out.split("PARENT:\n")[1].startswith("ws\n")  # its parent holds only the workspace
    assert out.endswith("[exit code 0]")  # /etc is read-only but readable: programs need it


@needs_bwrap
def test_paths_inside_match_the_workspace_and_read_file(sandboxed: None, ws: Path) -> None:
    fns = make_builtin_functions(Workspace(ws))
    out = fns["bash"]("pwd; mkdir -p sub && echo made-in-sandbox > sub/f.txt && realpath sub/f.txt")
    assert out == f"{ws.resolve()}\n{ws.resolve()}/sub/f.txt\n[exit code 0]"
    assert fns["read_file"]("sub/f.txt") == "made-in-sandbox\n"


@needs_bwrap
def test_writes_outside_the_workspace_fail_and_tmp_is_private(sandboxed: None, ws: Path,
                                                              tmp_path: Path) -> None:
    name = f"jupyter-agent-sandbox-{random.randrange(10**9)}"
    out = bash_in(ws)(
        f"touch /etc/{name}; touch /usr/{name}; touch {tmp_path}/{name}; mkdir /{name}; "
        f"echo private > /tmp/{name} && cat /tmp/{name}; echo inside > {name}")
    assert out.count("Read-only file system") >= 2
    assert not Path(f"/etc/{name}").exists() and not Path(f"/usr/{name}").exists()
    assert not (tmp_path / name).exists() and not Path(f"/{name}").exists()
    assert "private" in out and not Path(f"/tmp/{name}").exists()  # the sandbox's own /tmp
    assert (ws / name).read_text() == "inside\n"


@needs_bwrap
def test_no_home_folder(sandboxed: None, ws: Path) -> None:
    home = os.path.realpath(os.path.expanduser("~"))
    out = bash_in(ws)(f"echo HOME=$HOME; ls -a {home} ; ls -a ~")
    assert "HOME=/tmp" in out
    assert f"ls: cannot access '{home}': No such file or directory" in out
    assert out.endswith("[exit code 0]")  # ~ is the sandbox's private, empty /tmp


_READ_PARENT_ENV = """
import sys
from jupyter_agent.tools.builtin import Workspace, make_builtin_functions
bash = make_builtin_functions(Workspace(sys.argv[1]))["bash"]
print(bash("tr '\\\\0' '\\\\n' < /proc/$PPID/environ; "
           "for p in /proc/[0-9]*; do tr '\\\\0' '\\\\n' < $p/environ; done; env"))
"""


def _bash_from_a_kernel_with_secrets(ws: Path, mode: str) -> str:
    """Run bash from a fresh process whose *startup* environment holds the secrets, as a
    kernel started with them does (``/proc/PID/environ`` shows the startup environment)."""
    env = {**os.environ, **SECRETS, "HARMLESS_SETTING": "visible-value",
           "JUPYTER_AGENT_SANDBOX": mode}
    done = subprocess.run([sys.executable, "-c", _READ_PARENT_ENV, str(ws)], env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


@needs_bwrap
def test_the_kernels_environment_is_out_of_reach(sandboxed: None, ws: Path) -> None:
    out = _bash_from_a_kernel_with_secrets(ws, "auto")
    for value in SECRETS.values():
        assert value not in out
    assert "HARMLESS_SETTING=visible-value" in out  # the scrub is by name, not wholesale
    # The same command without the sandbox reads the kernel's secrets: the sandbox is the fix.
    unconfined = _bash_from_a_kernel_with_secrets(ws, "off")
    assert SECRETS["GITHUB_TOKEN"] in unconfined


@needs_bwrap
def test_only_sandbox_processes_are_listed(sandboxed: None, ws: Path) -> None:
    out = bash_in(ws)("for p in /proc/[0-9]*; do echo \"${p#/proc/} $(cat $p/comm)\"; done")
    rows = [line.split(" ", 1) for line in out.splitlines()[:-1]]
    pids = {int(pid) for pid, _ in rows}
    names = {name for _, name in rows}
    assert 1 in pids and len(pids) <= 6, out
    assert names <= {"bwrap", "bash", "cat"}, out  # no python, no kernel, no jupyter


@needs_bwrap
@pytest.mark.parametrize("launch", [
    "setsid sleep {m} & echo started",
    "nohup setsid sleep {m} >/dev/null 2>&1 & echo started",
    "(setsid sh -c 'trap \"\" TERM HUP; sleep {m} & sleep {m}' &) ; echo started",
])
def test_no_process_outlives_the_call(sandboxed: None, ws: Path, marker: str,
                                      launch: str) -> None:
    out = bash_in(ws)(launch.format(m=marker))
    assert out.startswith("started\n") and out.endswith("[exit code 0]")
    assert "background process(es) still running when the command ended were stopped" in out
    assert running_with(marker) == []  # checked from outside, by command line


@needs_bwrap
def test_a_timeout_kills_the_whole_sandbox(sandboxed: None, ws: Path, marker: str) -> None:
    out = bash_in(ws)(f"setsid sleep {marker} & sleep {marker}", timeout=1)
    assert out.endswith("Command timed out after 1 s (killed; pass a larger timeout, at most "
                        "600 s)")
    assert running_with(marker) == []


@needs_bwrap
def test_an_interrupt_kills_the_whole_sandbox(sandboxed: None, ws: Path, marker: str) -> None:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            run_command(f"setsid sleep {marker} & sleep {marker}", cwd=ws, timeout=30,
                        sandbox=sandbox_status())
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert running_with(marker) == []


def _listener() -> tuple[socket.socket, list[bool]]:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(5)
    accepted: list[bool] = []

    def accept() -> None:
        try:
            conn, _ = srv.accept()
        except OSError:
            return
        accepted.append(True)
        conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return srv, accepted


@needs_bwrap
def test_the_network_is_cut_off_unless_allowed(sandboxed: None, ws: Path) -> None:
    srv, accepted = _listener()
    port = srv.getsockname()[1]
    probe = f"echo hello > /dev/tcp/127.0.0.1/{port} && echo CONNECTED"
    try:
        out = bash_in(ws)(probe, timeout=10)
        assert "CONNECTED" not in out and accepted == []
        assert not out.endswith("[exit code 0]")
        desc = make_builtin_functions(Workspace(ws))["bash"].__doc__ or ""
        assert "network" not in desc  # the default rules need no extra words

        allowed = bash_in(ws, allow_network=True)
        assert "network access" in (allowed.__doc__ or "")
        out = allowed(probe, timeout=10)
        assert "CONNECTED" in out
    finally:
        srv.close()


@needs_bwrap
def test_an_agent_allows_the_network_for_its_bash(sandboxed: None, ws: Path,
                                                  server: ScriptedOpenAI) -> None:
    srv, accepted = _listener()
    port = srv.getsockname()[1]
    probe = f"echo hi > /dev/tcp/127.0.0.1/{port} && echo CONNECTED"
    fetcher = Agent("fetcher", workspace=ws, tools=["bash"], allow_network=True)
    closed = Agent("closed", workspace=ws, tools=["bash"])
    try:
        for agent in (closed, fetcher):
            server.enqueue(tool_calls([call("bash", {"command": probe})]), text("done"))
            run = toolloop("Connect.", agent=agent, auto_approve=True)
            assert run.status == "done"
        results = [m["content"] for r in server.requests for m in r["messages"]
                   if m["role"] == "tool"]
    finally:
        agents.forget_agent("fetcher")
        agents.forget_agent("closed")
        srv.close()
    assert "CONNECTED" not in results[0]
    assert "CONNECTED" in results[-1] and accepted == [True]


@needs_bwrap
def test_root_only_system_files_stay_hidden(sandboxed: None, ws: Path) -> None:
    shadow = Path("/etc/shadow")
    if os.geteuid() != 0 or not shadow.is_file():
        pytest.skip("only root could read /etc/shadow anyway")
    first = shadow.read_text().splitlines()[0]
    out = bash_in(ws)("cat /etc/shadow; wc -c < /etc/shadow")
    assert first not in out


@needs_bwrap
def test_a_symlink_out_of_the_workspace_leads_nowhere(sandboxed: None, ws: Path,
                                                      tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "s.txt").write_text("OUTSIDE\n")
    (ws / "link").symlink_to(outside)
    out = bash_in(ws)(f"cat link/s.txt; ln -s {outside}/s.txt made; cat made; echo x > link/new")
    assert "OUTSIDE" not in out
    assert not (outside / "new").exists()


# ------------------------------------------------------------------ secrets, either way


@pytest.mark.parametrize("mode", ["auto", "off"])
def test_secret_names_never_reach_a_command(mode: str, ws: Path, monkeypatch: pytest.MonkeyPatch,
                                            secrets_in_env: dict[str, str]) -> None:
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX", mode)
    out = bash_in(ws)("env")
    for name, value in secrets_in_env.items():
        assert name not in out and value not in out
    assert "HARMLESS_SETTING=visible-value" in out


def test_the_allow_list_lets_a_named_variable_through(ws: Path, monkeypatch: pytest.MonkeyPatch,
                                                      secrets_in_env: dict[str, str]) -> None:
    monkeypatch.setenv("JUPYTER_AGENT_ENV_ALLOW", "hf_token, DB_PASSWORD")
    out = bash_in(ws)("env")
    assert f"HF_TOKEN={secrets_in_env['HF_TOKEN']}" in out
    assert f"DB_PASSWORD={secrets_in_env['DB_PASSWORD']}" in out
    for name in ("GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY"):
        assert name not in out and secrets_in_env[name] not in out


def test_the_python_sandbox_gets_the_same_scrub(ws: Path,
                                                secrets_in_env: dict[str, str]) -> None:
    run_python = python_sandbox(ws)
    result = run_python.invoke(json.dumps({"code": "import os\ndict(os.environ)"}))
    for name, value in secrets_in_env.items():
        assert name not in result.output and value not in result.output
    assert "HARMLESS_SETTING" in result.output


# ------------------------------------------------------------------ without the sandbox


@pytest.fixture
def no_bwrap_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding the few programs the tests run, and no bwrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for prog in ("bash", "cat", "env", "tr"):
        found = shutil.which(prog)
        assert found is not None
        (bin_dir / prog).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("JUPYTER_AGENT_SANDBOX", raising=False)
    return bin_dir


def test_without_bwrap_bash_says_it_is_not_confined(no_bwrap_on_path: Path, ws: Path) -> None:
    status = sandbox_status()
    assert not status.confined and "bubblewrap is not installed" in status.reason
    bash = bash_in(ws)
    assert "It is NOT sandboxed here" in (bash.__doc__ or "")
    # ...and it is the truth: the kernel's own process is in reach.
    out = bash(f"tr '\\0' ' ' < /proc/{os.getpid()}/cmdline")
    assert "python" in out or "pytest" in out


def test_without_bwrap_the_approval_card_warns(no_bwrap_on_path: Path, ws: Path) -> None:
    ask = approval_ask(ToolCall(id="c1", name="bash", arguments='{"command": "ls"}'), "bash",
                       str(ws))
    assert ask["question"].startswith("Run this command in the workspace?")
    assert "NOT sandboxed" in ask["question"]
    assert "bubblewrap is not installed" in ask["detail"]["sandbox"]
    other = approval_ask(ToolCall(id="c2", name="write_file", arguments="{}"), "write_file", None)
    assert "sandbox" not in other["detail"] and "NOT" not in other["question"]


def test_without_bwrap_a_run_shows_the_warning_to_model_and_user(
        no_bwrap_on_path: Path, ws: Path, server: ScriptedOpenAI) -> None:
    server.enqueue(tool_calls([call("bash", {"command": "ls"})]))
    agent = Agent("open-shell", workspace=ws, tools=["bash"])
    try:
        run = toolloop("List files.", agent=agent)
    finally:
        agents.forget_agent("open-shell")
    assert run.status == "ask"
    described = [t["function"]["description"] for t in server.requests[0]["tools"]]
    assert any("NOT sandboxed" in d for d in described)
    assert run.pending is not None and "NOT sandboxed" in run.pending.card.question


@needs_bwrap
def test_with_bwrap_the_card_and_description_stay_plain(sandboxed: None, ws: Path) -> None:
    ask = approval_ask(ToolCall(id="c1", name="bash", arguments='{"command": "ls"}'), "bash",
                       str(ws))
    assert ask["question"] == "Run this command in the workspace?"
    assert "sandbox" not in ask["detail"]
    assert "NOT" not in (bash_in(ws).__doc__ or "")


def test_turned_off_bash_runs_unconfined_and_says_so(ws: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX", "off")
    (tmp_path / "beside.txt").write_text("BESIDE\n")
    bash = bash_in(ws)
    assert "NOT sandboxed" in (bash.__doc__ or "")
    assert "BESIDE" in bash(f"cat {tmp_path}/beside.txt")


def test_required_sandbox_refuses_to_run_without_it(no_bwrap_on_path: Path, ws: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX", "require")
    bash = bash_in(ws)
    assert "cannot run here" in (bash.__doc__ or "")
    with pytest.raises(ToolError, match="sandbox is required but unavailable"):
        bash("echo should-not-run > ran.txt")
    assert not (ws / "ran.txt").exists()


def test_a_bad_sandbox_setting_is_one_clear_error(ws: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX", "maybe")
    with pytest.raises(ConfigError, match="JUPYTER_AGENT_SANDBOX must be one of auto, off, "
                                          "require, not 'maybe'"):
        make_builtin_functions(Workspace(ws))
