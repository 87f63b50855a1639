"""Issue 35: a password inside a URL is a secret wherever secrets are.

``DATABASE_URL=postgresql://app:PASSWORD@db/prod`` passes a filter by name. Masking catches
the plain password in an output, but a child process that has it can send it back reversed
or base64-encoded. So a child's environment (``scrub_env``, which ``bash`` uses) keeps the
URL with the password replaced, and every output masks the password.
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_agent import tool
from jupyter_agent.agents.resume import Answer, resume
from jupyter_agent.agents.toolloop import toolloop
from jupyter_agent.base import secrets
from jupyter_agent.base.secrets import MASK, mask, scrub_env
from jupyter_agent.replay import go_live
from tests.adversarial.test_secrets import store_bytes
from tests.fakes.openai_server import ScriptedOpenAI, call, text, tool_calls

pytestmark = pytest.mark.timeout(120)

PASSWORD = "Hunter2-Db-Pass-77"
URLS = {
    "DATABASE_URL": f"postgresql://app:{PASSWORD}@db:5432/prod",
    "REDIS_URL": "redis://:short1@cache/0",  # shorter than any masked secret: still dropped
    "BROKER": "amqp://user:p@ss@w0rd-with-at@mq//",  # an unescaped @ in the password
    "PG_CONN": "host=db user=app password=kw-pass-9913 dbname=prod",
}
PASSWORDS = [PASSWORD, "short1", "p@ss@w0rd-with-at", "kw-pass-9913"]


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(secrets.SECRET_ENV_ALLOW, raising=False)
    secrets._reset_for_tests()
    yield
    go_live()
    secrets._reset_for_tests()


def decoded(out: bytes) -> bytes:
    """Every line of ``out`` that is base64, decoded (a password inside a base64-encoded URL
    is no substring of it)."""
    got = []
    for line in out.split():
        try:
            got.append(base64.b64decode(line, validate=True))
        except ValueError:
            pass
    return b"\n".join(got)


def encodings(secret: str) -> set[bytes]:
    raw = secret.encode()
    return {raw, raw[::-1], base64.b64encode(raw), raw.hex().encode(), secret.upper().encode()}


def test_a_child_given_scrub_env_cannot_print_a_url_password_in_any_encoding() -> None:
    env = {**scrub_env({"PATH": os.environ["PATH"], **URLS})}
    assert env["DATABASE_URL"] == f"postgresql://app:{MASK}@db:5432/prod"  # the URL stays
    assert env["PG_CONN"] == f"host=db user=app password={MASK} dbname=prod"
    # The child has nothing to carry back: not its environment, not its own environ file.
    script = ("printenv | rev; printenv | base64 -w0; echo; cat /proc/self/environ | od -An -c; "
              "for v in DATABASE_URL REDIS_URL BROKER PG_CONN; do printenv $v | rev; "
              "printenv $v | base64; done")
    out = subprocess.run(["sh", "-c", script], env=env, capture_output=True, check=True).stdout
    plain = decoded(out)
    for pw in PASSWORDS:
        for form in encodings(pw):
            assert form not in out and form not in plain, (pw, form)
    assert b"]detcader[" in out and MASK.encode() in plain  # there, without their passwords


def test_the_allow_list_still_passes_a_url_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(secrets.SECRET_ENV_ALLOW, "DATABASE_URL")
    assert scrub_env(URLS)["DATABASE_URL"] == URLS["DATABASE_URL"]
    assert scrub_env(URLS)["REDIS_URL"] == f"redis://:{MASK}@cache/0"


def test_a_tool_result_with_a_url_password_is_masked(server: ScriptedOpenAI,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in URLS.items():
        monkeypatch.setenv(k, v)

    @tool
    def conn() -> str:
        """The connection string."""
        return os.environ["DATABASE_URL"] + " " + os.environ["PG_CONN"]

    server.enqueue(tool_calls([call("conn", {}, id="c1")]), text("ok"))
    run = toolloop("Connect.")
    sent = [m["content"] for b in server.requests for m in b["messages"] if m["role"] == "tool"]
    assert sent == [f"postgresql://app:{MASK}@db:5432/prod host=db user=app password={MASK} "
                    "dbname=prod"]
    assert PASSWORD not in run.answer + str(run.view) and "kw-pass-9913" not in str(run.view)
    stored = store_bytes()  # the store's files, WAL included
    assert MASK.encode() in stored
    assert PASSWORD.encode() not in stored and b"kw-pass-9913" not in stored
    assert mask(f"x {PASSWORD} y") == f"x {MASK} y"


def test_approved_bash_cannot_send_a_url_password_back_reversed(
        server: ScriptedOpenAI, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in URLS.items():
        monkeypatch.setenv(k, v)
    command = "printenv DATABASE_URL | rev; printenv DATABASE_URL | base64; printenv PG_CONN | rev"
    server.enqueue(tool_calls([call("bash", {"command": command}, id="b1")]), text("done"))
    run = toolloop("Show it.", tools=["bash"])
    assert run.status == "ask" and run.view["ask"]["kind"] == "approval"
    run = resume(run.run_id, Answer("option", option_index=1), run=run)  # "Allow once"
    assert run.status == "done"
    (result,) = [m["content"] for b in server.requests for m in b["messages"]
                 if m["role"] == "tool"]
    assert "]detcader[" in result  # it ran, and reversed the masked URL
    plain = decoded(result.encode())
    assert MASK.encode() in plain
    for pw in PASSWORDS:
        for form in encodings(pw):
            assert form not in result.encode() and form not in plain, (pw, form)
