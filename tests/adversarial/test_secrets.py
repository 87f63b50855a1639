"""Secrets never reach an output (docs/security.md): hostile tools, servers and streams.

Every test drives the real stack (the ``openai`` client over HTTP to the scripted server,
the SQLite store, real ``bash``), makes a known secret travel toward an output, and then
searches every channel for it: the requests sent to the model, the events a listener saw,
the view, each representation of the MIME bundle, ``run.answer``/``run.error``, the bytes of
the store's files, a cassette and an export. Each test also checks that the secret really
was on its way (``[redacted]`` shows where it was), so a test cannot pass because the attack
silently did nothing.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from jupyter_agent import register_secret, tool
from jupyter_agent.agents.chat import chat
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base import config, secrets
from jupyter_agent.base.errors import JupyterAgentError, ModelRequestError
from jupyter_agent.base.events import BaseEvent, event_to_json
from jupyter_agent.base.secrets import (
    MASK,
    StreamMasker,
    is_secret_name,
    mask,
    mask_json,
    scrub_env,
)
from jupyter_agent.replay import go_live, start
from jupyter_agent.session import default_store
from jupyter_agent.view.bundle import build_bundle
from jupyter_agent.view.notebook_export import export_session
from tests.fakes.openai_server import ScriptedOpenAI, call, error, text, tool_calls
from tests.notebooks.test_core_notebook import python3_kernel as notebook_kernel  # noqa: F401

pytestmark = pytest.mark.timeout(120)
# ``notebook_kernel`` above is the notebook tests' kernel fixture, under a name of this module.

SERVER_KEY = "sk-test-key-0123456789"  # the ``server`` fixture's OPENAI_API_KEY


@pytest.fixture(autouse=True)
def _fresh_rules(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # No test inherits another's registered secrets, and none leaves the replay mode on.
    monkeypatch.delenv(secrets.SECRET_ENV_ALLOW, raising=False)
    secrets._reset_for_tests()
    yield
    go_live()
    secrets._reset_for_tests()



# -- where to look ---------------------------------------------------------------------------


def forms_of(secret: str) -> set[str]:
    """The secret as any channel could hold it: raw, JSON-escaped (once, twice, ASCII or
    not), URL-encoded."""
    once = {json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    twice = {json.dumps(f)[1:-1] for f in once} | {
        json.dumps(f, ensure_ascii=False)[1:-1] for f in once}
    return {secret, quote(secret, safe=""), *once, *twice}


def store_bytes() -> bytes:
    """Every byte of the store: the database file, its WAL and shared-memory files."""
    path = default_store().path
    return b"".join(p.read_bytes() for p in sorted(path.parent.iterdir())
                    if p.is_file() and p.name.startswith(path.name))


def tool_messages(server: ScriptedOpenAI) -> list[str]:
    return [m["content"] for body in server.requests for m in body["messages"]
            if m["role"] == "tool"]


def channels(run: Any, server: ScriptedOpenAI | None, *, seen: list[BaseEvent] | None = None,
             files: tuple[Path, ...] = (), export_to: Path | None = None) -> dict[str, bytes]:
    """Everything a run produced, by channel, as bytes to search."""
    bundle = build_bundle(run.view, "model-id")
    out: dict[str, str | bytes] = {
        "events": json.dumps(run.events_json(), ensure_ascii=False),
        "view": json.dumps(run.view, ensure_ascii=False),
        "bundle": json.dumps(bundle, ensure_ascii=False),
        "bundle markdown": bundle["text/markdown"],
        "bundle plain": bundle["text/plain"],
        "run.answer": run.answer,
        "run.error": run.error or "",
        "run.tool_calls[output]": json.dumps([r["output"] for r in run.tool_calls]),
        "store": store_bytes(),
    }
    if server is not None:
        out["tool messages sent to the model"] = json.dumps(tool_messages(server),
                                                           ensure_ascii=False)
    if seen is not None:
        out["events a listener saw"] = json.dumps([event_to_json(e) for e in seen],
                                                  ensure_ascii=False)
    for f in files:
        out[f"file {f.name}"] = f.read_bytes()
    if export_to is not None:
        out["export"] = export_session(export_to, run.session).read_bytes()
    return {k: v if isinstance(v, bytes) else v.encode() for k, v in out.items()}


def assert_nowhere(secret: str, where: dict[str, bytes]) -> None:
    for name, data in where.items():
        for form in forms_of(secret):
            assert form.encode() not in data, f"{form!r} leaked into {name}"


# -- tools that echo a key --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "HF_TOKEN",
                                  "OPENAI_API_KEY"])
def test_a_tool_returning_an_environment_key(name: str, server: ScriptedOpenAI, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    secret = SERVER_KEY if name == "OPENAI_API_KEY" else f"{name.lower()}-Zq81xWv0-93kd1"
    monkeypatch.setenv(name, secret)

    @tool
    def read_env(var: str) -> str:
        """Read an environment variable."""
        return f"{var}={os.environ[var]}"

    @tool
    def read_env_json(var: str) -> dict[str, str]:
        """Read it again, as a dict (JSON for the model)."""
        return {"var": var, "value": os.environ[var], "url": "https://x/?k=" + quote(
            os.environ[var], safe="")}

    server.enqueue(tool_calls([call("read_env", {"var": name}, id="c1"),
                               call("read_env_json", {"var": name}, id="c2")]),
                   text("I read it."))
    cassette = tmp_path / "c.cassette.json"
    start("record", cassette, keep_store=True)
    seen: list[BaseEvent] = []
    run = toolloop("Read the variable.", listeners=[seen.append])
    go_live()

    assert run.status == "done" and run.answer == "I read it."
    sent = tool_messages(server)
    assert sent[0] == f"{name}={MASK}" and MASK in sent[1]  # it was there, and masked
    assert run.tool_values["c1"] == f"{name}={secret}"  # the Python value stays the user's
    assert_nowhere(secret, channels(run, server, seen=seen, files=(cassette,),
                                    export_to=tmp_path / "export.ipynb"))


def test_a_registered_secret_is_masked_like_an_environment_key(
        server: ScriptedOpenAI, tmp_path: Path) -> None:
    secret = "vault-db-password-Q9v2"  # in no environment variable: only registered
    register_secret(secret)

    @tool
    def db_password() -> str:
        """The database password."""
        return f"The password is {secret}"

    server.enqueue(tool_calls([call("db_password", {}, id="c1")]), text("Got it."))
    run = toolloop("What is the password?")
    assert tool_messages(server) == [f"The password is {MASK}"]
    assert_nowhere(secret, channels(run, server, export_to=tmp_path / "e.ipynb"))


def test_a_tool_that_prints_the_key_prints_it_masked(server: ScriptedOpenAI,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    secret = "ghp_PrintedToken000111"
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    before = sys.stdout

    @tool
    def noisy() -> str:
        """Print things."""
        print("token:", secret)
        sys.stderr.write(f"warning {secret[:9]}")  # split over two writes
        sys.stderr.write(f"{secret[9:]} end\n")
        return "printed"

    server.enqueue(tool_calls([call("noisy", {}, id="c1")]), text("ok"))
    run = toolloop("Print it.")
    assert run.status == "done"
    assert sys.stdout is before  # the run's wrapper is gone once it ended
    out = capsys.readouterr()
    assert f"token: {MASK}" in out.out and f"warning {MASK} end" in out.err
    assert secret not in out.out + out.err
    print(secret)  # after the run, printing is the user's business again
    assert secret in capsys.readouterr().out


# -- real bash, unconfined, reading the environment of another process ------------------------


def test_approved_bash_reading_proc_environ_and_env(server: ScriptedOpenAI, workspace: Path,
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc")
    secret = "ghp_ProcEnvironLeak424242"
    hf = "hf_SecondTokenForEnv9999"
    monkeypatch.setenv("GITHUB_TOKEN", secret)  # the kernel knows both keys
    monkeypatch.setenv("HF_TOKEN", hf)
    # The worst case for masking: bash unconfined (inside bubblewrap the other process's /proc
    # entry is not even visible; tests/adversarial/test_sandbox.py checks that).
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX", "off")
    # A process started with the keys in its environment, as the kernel is: its environ
    # file holds them whatever the bash tool leaves out of its own child's environment.
    holder = subprocess.Popen(["sleep", "60"], env={**os.environ})
    try:
        command = (f"tr '\\0' '\\n' < /proc/{holder.pid}/environ | grep -E 'TOKEN'; "
                   "env | grep -E 'TOKEN|KEY' || true")
        server.enqueue(tool_calls([call("bash", {"command": command}, id="b1")]),
                       text("Here is what I found."))
        seen: list[BaseEvent] = []
        run = toolloop("Show the tokens.", tools=["bash"], listeners=[seen.append])
        assert run.status == "ask" and run.view["ask"]["kind"] == "approval"
        run = resume(run.run_id, Answer("option", option_index=1), run=run,
                     listeners=[seen.append])  # "Allow once": the command really runs
    finally:
        holder.kill()
        holder.wait()
    assert run.status == "done"
    (result,) = tool_messages(server)
    assert f"GITHUB_TOKEN={MASK}" in result and f"HF_TOKEN={MASK}" in result
    where = channels(run, server, seen=seen, export_to=tmp_path / "e.ipynb")
    assert_nowhere(secret, where)
    assert_nowhere(hf, where)


# -- a server that echoes the key -------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 500])
def test_a_server_error_that_echoes_the_key(status: int, server: ScriptedOpenAI,
                                            tmp_path: Path, fast_retries: None) -> None:
    # The client keeps 300 characters of a server's message: this cut falls inside the key,
    # so masking must come first, or the key's first 15 characters would survive the cut.
    message = "x" * 285 + f"{SERVER_KEY} is not a valid API key."
    server.default = error(status, message)
    seen: list[BaseEvent] = []
    run = chat("hello", listeners=[seen.append])
    assert run.status == "error" and run.error and "HTTP" in run.error
    assert len(server.requests) == (1 if status == 401 else 4)  # 500 is retried
    where = channels(run, None, seen=seen, export_to=tmp_path / "e.ipynb")
    assert_nowhere(SERVER_KEY, where)
    for name, data in where.items():  # not even the half before a cut
        assert SERVER_KEY[:8].encode() not in data, name
    turns = default_store().list_turns("default")
    assert turns[-1].status == "error"


def test_error_messages_mask_what_they_carry(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "tok-errors-Kx81-0000"
    monkeypatch.setenv("SERVICE_TOKEN", secret)
    exc = ModelRequestError(f"upstream said: bad token {secret}", status_code=401)
    assert secret not in str(exc) and MASK in str(exc)
    assert secret not in repr(exc) and all(secret not in str(a) for a in exc.args)
    late = "registered-after-the-error-1"
    err = JupyterAgentError(f"context: {late}")
    register_secret(late)
    assert late not in str(err)  # masked when shown, too
    import traceback

    try:
        raise ModelRequestError(f"again {secret}")
    except ModelRequestError as e:
        assert secret not in "".join(traceback.format_exception(type(e), e, e.__traceback__))


def test_a_key_pasted_into_a_prompt(server: ScriptedOpenAI, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "ghp_PastedIntoPrompt777"
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    server.enqueue(text("Thanks, noted."))
    seen: list[BaseEvent] = []
    run = chat(f"My token is {secret}, keep it.", listeners=[seen.append])
    # Sent to the model as typed: the user chose to send it (docs/security.md)...
    assert secret in server.requests[0]["messages"][-1]["content"]
    # ...but kept out of every output.
    assert run.view["prompt"] == f"My token is {MASK}, keep it."
    assert_nowhere(secret, channels(run, None, seen=seen, export_to=tmp_path / "e.ipynb"))


def test_a_secret_known_only_after_the_run(server: ScriptedOpenAI, tmp_path: Path) -> None:
    late = "later-registered-Hq55"
    server.enqueue(text(f"The code is {late}."))
    run = chat("What is the code?")
    assert late in run.answer and late.encode() in store_bytes()  # not a secret back then
    register_secret(late)
    # Bundles and exports made from now on hold it no more.
    bundle = build_bundle(run.view)
    assert late not in json.dumps(bundle, ensure_ascii=False)
    assert MASK in bundle["text/markdown"] and MASK in bundle["text/plain"]
    exported = export_session(tmp_path / "late.ipynb", run.session).read_text()
    assert late not in exported and MASK in exported


# -- the %config key in a real IPython shell --------------------------------------------------


def test_the_config_key_never_reaches_the_store(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    shell = start_ipython() or get_ipython()
    assert shell.run_cell("%load_ext jupyter_agent").success
    secret = "sk-configured-Vb71-223344556677"
    with ScriptedOpenAI(expected_key=secret) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        with capture_output() as cap:
            assert shell.run_cell(f"%config AgentMagics.api_key = '{secret}'").success
            shell.user_ns["leak_key"] = lambda: config.settings.api_key.get_secret_value()
            assert shell.run_cell(
                "from jupyter_agent import tool\n"
                "@tool\n"
                "def whoami() -> str:\n"
                "    '''The key in use.'''\n"
                "    return 'key=' + leak_key()\n").success
            srv.enqueue(tool_calls([call("whoami", {}, id="w1")]), text("done"))
            result = shell.run_cell("%%toolloop --tools whoami\nWhich key do you use?")
            # A key pasted into a prompt goes to the model as typed, but is stored masked.
            srv.enqueue(text("noted"))
            result2 = shell.run_cell(f"%%chat\nRemember my key {secret} please.")
    try:
        assert result.success and result2.success, (result.error_in_exec, result2.error_in_exec)
        sent = [m["content"] for b in srv.requests for m in b["messages"] if m["role"] == "tool"]
        assert sent and set(sent) == {f"key={MASK}"}  # the chat's history carries it too
        assert secret not in cap.stdout + cap.stderr
        assert_nowhere(secret, {"displayed": json.dumps([o.data for o in cap.outputs]).encode(),
                                "store": store_bytes()})
        assert MASK.encode() in store_bytes()  # the prompt was stored, masked
    finally:
        for name in ("leak_key", "whoami", "_agent_run"):
            shell.user_ns.pop(name, None)
        from jupyter_agent.tools.registry import REGISTRY

        REGISTRY.clear()


# -- streams that split a secret --------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 3, 5, 7])
def test_a_secret_split_across_stream_deltas(chunk: int, server: ScriptedOpenAI,
                                             tmp_path: Path) -> None:
    reasoning = f"I could say {SERVER_KEY} here."
    answer = f"The key is {SERVER_KEY}, and sk-test is only its start."
    server.enqueue(text(answer, reasoning=reasoning, chunk_size=chunk))
    seen: list[BaseEvent] = []
    run = chat("Tell me the key.", listeners=[seen.append])
    deltas = [e for e in seen if e.type in ("text_delta", "reasoning_delta")]  # type: ignore[attr-defined]
    assert len(deltas) > 3  # streamed in pieces, as the live view gets them
    # Pieces of the key that the masked text does not hold anyway ("sk-test" is in it).
    shown = answer.replace(SERVER_KEY, MASK) + reasoning.replace(SERVER_KEY, MASK)
    pieces = [p for i in range(len(SERVER_KEY) - 5) if (p := SERVER_KEY[i:i + 6]) not in shown]
    assert len(pieces) > 8
    for e in deltas:
        # No piece of the key reaches the live view, not even one delta's worth.
        assert not any(p in e.text for p in pieces), e  # type: ignore[attr-defined]
    # Nothing was lost either: the text is the original with the key masked.
    assert run.answer == answer.replace(SERVER_KEY, MASK)
    assert run.reasoning == reasoning.replace(SERVER_KEY, MASK)
    assert_nowhere(SERVER_KEY, channels(run, None, seen=seen, export_to=tmp_path / "e.ipynb"))


def test_held_back_text_that_is_no_secret_is_released_whole(server: ScriptedOpenAI) -> None:
    # Ends with what looks like the start of the key: released at the end of the round.
    answer = "Keys look like sk-test-k"
    server.enqueue(text(answer, chunk_size=4))
    seen: list[BaseEvent] = []
    run = chat("?", listeners=[seen.append])
    assert run.answer == answer
    assert "".join(e.text for e in seen if e.type == "text_delta") == answer  # type: ignore[attr-defined]


def test_stream_masker_against_random_splits() -> None:
    register_secret("abcabcabXY")  # overlapping prefixes: the hard case for hold-back
    register_secret("zz\"quoted/val\\ue")
    rng = random.Random(7)
    alphabet = ["abc", "abcab", "abcabcabXY", "XY", "zz", "zz\\\"quoted\\/val", "\\\\ue", " ",
                "zz\"quoted/val\\ue", "abcabcabX"]
    for _ in range(400):
        full = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        cuts = sorted(rng.sample(range(len(full) + 1), min(len(full) + 1, rng.randint(0, 6))))
        parts = [full[i:j] for i, j in zip([0, *cuts], [*cuts, len(full)])]
        m = StreamMasker()
        shown = [m.feed(p) for p in parts] + [m.flush()]
        assert "".join(shown) == mask(full), (parts, shown)
        assert not any("abcabcabXY" in s for s in shown)


# -- JSON-escaped in tool arguments ------------------------------------------------------------


def test_a_secret_json_escaped_in_tool_arguments(server: ScriptedOpenAI, tmp_path: Path) -> None:
    secret = 'pa"ss\\wo/rd-ключ-77'  # quote, backslash, slash, non-ASCII: all escaped in JSON
    register_secret(secret)
    got: list[str] = []

    @tool
    def save_note(note: str) -> str:
        """Save a note."""
        got.append(note)
        return json.dumps({"saved": note})  # echoed back, escaped once more

    args = json.dumps({"note": f"remember {secret}"})  # the model's arguments, JSON-escaped
    assert secret not in args and json.dumps(secret)[1:-1] in args
    server.enqueue(tool_calls([call("save_note", args, id="n1")], chunk_size=3),
                   text("Saved."))
    cassette = tmp_path / "c.cassette.json"
    start("record", cassette, keep_store=True)
    seen: list[BaseEvent] = []
    run = toolloop("Save my note.", listeners=[seen.append])
    go_live()
    assert got == [f"remember {secret}"]  # the tool itself gets the real value
    assert MASK in tool_messages(server)[0]
    card = next(i for i in run.view["items"] if i["kind"] == "tool")
    assert json.loads(card["arguments"]) == {"note": f"remember {MASK}"}
    assert_nowhere(secret, channels(run, server, seen=seen, files=(cassette,),
                                    export_to=tmp_path / "e.ipynb"))


def test_mask_json_stays_valid_when_a_secret_spans_two_strings() -> None:
    register_secret('a","b-c0ffee')
    raw = json.dumps(["a", "b-c0ffee"], separators=(",", ":"))  # text holds the raw form
    assert 'a","b-c0ffee' in raw
    masked = mask_json(raw)
    assert json.loads(masked) == ["a", "b-c0ffee"]  # each string alone holds no secret
    inside = json.dumps({"k": 'x a","b-c0ffee y', "n": 1})
    assert json.loads(mask_json(inside)) == {"k": f"x {MASK} y", "n": 1}



def test_a_secret_escaped_as_html_is_masked_in_each_form() -> None:
    import html

    secret = """k-<&>"'-c0ffee42"""
    register_secret(secret)
    for form in (html.escape(secret), html.escape(secret, quote=False)):
        assert form != secret and form in f"<p>{form}</p>"
        assert mask(f"<p>{form}</p>") == f"<p>{MASK}</p>"
    assert secrets._html_escapes(secret) == (html.escape(secret, quote=False), html.escape(secret))


# -- names, the environment as it changes, and the cost ----------------------------------------


def test_secret_names() -> None:
    for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "HF_TOKEN",
                 "PGPASSWORD", "MYSQL_PWD", "JUPYTERHUB_API_TOKEN", "db_password", "apikey"):
        assert is_secret_name(name), name
    for name in ("PWD", "OLDPWD", "SSH_AUTH_SOCK", "AWS_REGION", "HF_HOME", "KEYMAP",
                 "GIT_AUTHOR_NAME", "TOKENIZERS_PARALLELISM", "PATH"):
        assert not is_secret_name(name), name


def test_scrub_env_and_the_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"PATH": "/bin", "GITHUB_TOKEN": "t" * 20, "AWS_REGION": "us-east-1",
           "AWS_PROFILE": "prod", "PIP_INDEX_TOKEN": "p" * 20, "HOME": "/root"}
    assert scrub_env(env) == {"PATH": "/bin", "HOME": "/root"}
    monkeypatch.setenv(secrets.SECRET_ENV_ALLOW, "pip_index_token, AWS_REGION")
    assert set(scrub_env(env)) == {"PATH", "HOME", "PIP_INDEX_TOKEN", "AWS_REGION"}
    assert mask("region us-east-1") == "region us-east-1"  # configuration, not a secret


def test_the_environment_is_followed_as_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "first-value-123")
    assert mask("first-value-123") == MASK
    monkeypatch.setenv("MY_SERVICE_TOKEN", "second-value-456")  # same names, new value
    assert mask("second-value-456 first-value-123") == f"{MASK} first-value-123"
    monkeypatch.delenv("MY_SERVICE_TOKEN")
    assert mask("second-value-456") == "second-value-456"  # forgotten, not stale
    monkeypatch.setenv("DATABASE_URL", "postgres://app:s3cret-pass-99@db:5432/x")
    assert mask("pw s3cret-pass-99") == f"pw {MASK}"
    monkeypatch.setenv("SHORT_TOKEN", "1234567")  # below the minimum length: ignored
    assert mask("1234567") == "1234567"


def test_the_cost_of_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured, reported, and bounded only generously (the machine is shared)."""
    for i in range(5):
        monkeypatch.setenv(f"SERVICE_{i}_TOKEN", f"tok-{i}-" + "q" * 24)
    register_secret('weird"sec/ret-ключ-1')
    mask("warm")
    delta = "Hello wor"
    page = "The quick brown fox jumps over the lazy dog. " * 2300  # ~100 kB
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        mask(delta)
    per_delta = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(50):
        mask(page)
    per_page = (time.perf_counter() - t0) / 50
    m = StreamMasker()
    t0 = time.perf_counter()
    for _ in range(n):
        m.feed(delta)
    per_feed = (time.perf_counter() - t0) / n
    print(f"\nmask: {per_delta * 1e6:.2f} µs per delta, {per_page * 1e6:.0f} µs per 100 kB, "
          f"stream feed {per_feed * 1e6:.2f} µs (6 secrets, {len(os.environ)} variables)")
    assert per_delta < 0.001 and per_feed < 0.002 and per_page < 0.05


# -- a real kernel: the saved notebook ----------------------------------------------------------


@pytest.mark.notebook
@pytest.mark.timeout(300)
def test_a_saved_notebook_holds_no_secret(server: ScriptedOpenAI, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          request: pytest.FixtureRequest) -> None:
    from tests.notebooks.test_core_notebook import ROOT, code, run_notebook

    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc")
    secret = "ghp_KernelEnvironToken5150"
    # The kernel starts with the token in its environment, so its /proc/<pid>/environ holds
    # it: what an unconfined bash reads through /proc/$PPID/environ.
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX", "off")  # unconfined: the worst case for masking
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    command = "tr '\\0' '\\n' < /proc/$PPID/environ | grep -E '^GITHUB_TOKEN='"
    server.enqueue(
        tool_calls([call("leaky", {}, id="l1"), call("bash", {"command": command}, id="b1")]),
        text(f"Found {secret}.", chunk_size=3),  # the model repeats it, split in deltas
    )
    cells = [
        code("%load_ext jupyter_agent"),
        code("import os\nfrom jupyter_agent import tool\n\n"
             "@tool\n"
             "def leaky() -> str:\n"
             "    '''Print and return the token.'''\n"
             "    print('token is', os.environ['GITHUB_TOKEN'])\n"
             "    return os.environ['GITHUB_TOKEN']"),
        code("%%toolloop --tools leaky,bash\nShow me the token."),
        code("%agent resume --option 1"),  # "Allow once": the approved bash really runs
        code("print(_agent_run.status, _agent_run.answer)"),
    ]
    path = tmp_path / "leak.ipynb"
    nb, saved = run_notebook(cells, path, request.getfixturevalue("notebook_kernel"))

    data = path.read_bytes()
    assert saved.encode() == data
    printed = "".join(o.get("text", "") for o in nb.cells[4].outputs)
    assert printed.startswith("done Found [redacted].")
    assert f"token is {MASK}" in "".join(o.get("text", "") for o in nb.cells[2].outputs)
    assert f"GITHUB_TOKEN={MASK}" in saved  # bash read it, and it was masked
    assert_nowhere(secret, {"saved notebook": data, "store": store_bytes()})
    assert [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"] == [
        MASK, f"GITHUB_TOKEN={MASK}\n[exit code 0]"]
