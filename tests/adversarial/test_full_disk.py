"""Issue 35: a full disk where the store lives is one line, the answer is still shown ("not
saved"), and nothing saved earlier is damaged (a raw sqlite traceback in 38 of 40 cells before).

The disk is full for real: a 2 MB tmpfs mounted in a private mount namespace (``unshare -m``,
as root) holds ``JUPYTER_AGENT_HOME``; a child process in that namespace runs real cells in a
real kernel (nbclient) against the scripted server of this process. Skipped where the
namespace or the mount is not allowed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.openai_server import ScriptedOpenAI, text

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]

_CHILD = r'''
import json, sqlite3, sys
import nbformat
from jupyter_agent.replay.notebooks import execute_notebook
mnt, out = sys.argv[1], sys.argv[2]
fill = ("import os\n"
        "try:\n"
        "    with open(os.path.join(os.environ['JUPYTER_AGENT_HOME'], 'filler'), 'wb') as f:\n"
        "        while True:\n"
        "            f.write(b'\\0' * 65536)\n"
        "except OSError as e:\n"
        "    print('full:', e.strerror)")
cells = ["%load_ext jupyter_agent\nfrom jupyter_agent import tool\n\n"
         "@tool\ndef two() -> int:\n    'Two.'\n    return 2",
         "%%chat --session s1\nThe first question, while there is room.",
         fill]
cells += [f"%%chat --session s1\nQuestion {i} on a full disk." for i in range(4)]
cells += ["%%toolloop --session s2 --tools two\nA tool loop on a full disk."]
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
execute_notebook(nb, mnt, env={"JUPYTER_AGENT_HOME": mnt + "/home"}, allow_errors=True)
import os
os.remove(mnt + "/home/filler")
db = sqlite3.connect(next(str(p) for p in __import__("pathlib").Path(mnt + "/home").rglob("*.sqlite3")))
check = db.execute("PRAGMA integrity_check").fetchone()[0]
statuses = [r[0] for r in db.execute("SELECT status FROM runs")]
json.dump({"cells": [c.get("outputs", []) for c in nb.cells], "integrity": check,
           "statuses": statuses}, open(out, "w"))
'''


def _can_mount(where: Path) -> str:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return "needs root and unshare"
    r = subprocess.run(["unshare", "-m", "sh", "-c",
                        f"mount -t tmpfs -o size=64k tmpfs {where} && touch {where}/x"],
                       capture_output=True, text=True)
    return "" if r.returncode == 0 else f"cannot mount a tmpfs here: {r.stderr.strip()[:200]}"


def test_a_full_disk_is_one_line_the_answer_shows_and_nothing_earlier_is_damaged(
        server: ScriptedOpenAI, tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    why = _can_mount(mnt)
    if why:
        pytest.skip(why)
    server.default = text("An answer. " + "x" * 3000)
    out = tmp_path / "out.json"
    (tmp_path / "child.py").write_text(_CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    r = subprocess.run(
        ["unshare", "-m", "sh", "-c",
         'mount -t tmpfs -o size=2m tmpfs "$0" && exec "$1" "$2" "$0" "$3"',
         str(mnt), sys.executable, str(tmp_path / "child.py"), str(out)],
        env=env, capture_output=True, text=True, timeout=280)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(out.read_text())
    cells = got["cells"]
    assert "No space left" in json.dumps(cells[2])  # the disk really was full
    for outputs in cells[3:]:
        shown = json.dumps(outputs)
        assert "Traceback" not in shown and "OperationalError" not in shown, shown[:2000]
        assert not [o for o in outputs if o["output_type"] == "error"], shown[:2000]
        assert "An answer." in shown  # the answer is still shown
        # One line naming the store and the cause, saying the run is not saved.
        assert "could not be written (no space left on its disk); this run is not saved" \
            in shown, shown[:3000]
        assert "store.sqlite3" in shown or ".sqlite3" in shown
    # What was saved before the disk filled is intact.
    assert got["integrity"] == "ok"
    assert got["statuses"] == ["done"]
