"""`make demo` / `make test` on a clean clone: say what takes long before it starts, show a
heartbeat while it runs, and let nothing of ours print a warning (docs/behaviour.md, Install)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def dry_run(tmp_path: Path) -> list[str]:
    """The commands `make install` would run for a venv that does not exist yet."""
    out = subprocess.run(["make", "-n", "-C", str(ROOT), "install", f"VENV={tmp_path / 'venv'}"],
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def test_the_llama_cpp_compile_is_announced_before_it_starts_and_runs_under_a_heartbeat(
        tmp_path: Path) -> None:
    lines = dry_run(tmp_path)
    install = next(i for i, line in enumerate(lines) if '.[test,notebooks,local]' in line)
    said = " ".join(lines[:install])
    assert "Compiling llama.cpp" in said and "about 4 minutes on 2 cores" in said
    # The pip call itself (one logical line, continued) runs under the heartbeat.
    assert lines[install - 1].lstrip().startswith("hb()")
    # The JupyterLab install and the webpack build are announced and under a heartbeat too.
    assert any(line.startswith('echo "Installing JupyterLab') for line in lines)
    assert any("hb()" in line and "npm run build:prod" in line for line in lines)


def test_no_install_step_asks_for_an_extra_that_makes_pip_warn(tmp_path: Path) -> None:
    # scikit-build-core has no `pyproject` extra any more: pip warns "does not provide the extra".
    assert not any("[pyproject]" in line for line in dry_run(tmp_path))


def test_the_extension_builds_without_the_deprecated_jupyter_labextension_commands(
        tmp_path: Path) -> None:
    scripts = json.loads((ROOT / "labextension" / "package.json").read_text())["scripts"]
    for name, command in scripts.items():
        assert "jupyter labextension" not in command, (name, command)
    assert not any("jupyter labextension" in line for line in dry_run(tmp_path))


def test_the_heartbeat_prints_while_the_command_runs_and_keeps_its_exit_status(
        tmp_path: Path) -> None:
    probe = tmp_path / "probe.mk"
    probe.write_text(f"include {ROOT / 'Makefile'}\n"
                     "probe:\n"
                     "\t@$(HEARTBEAT) \"probing\" sh -c 'sleep 2.5; echo finished; exit 3'\n")
    done = subprocess.run(["make", "-s", "-f", str(probe), "probe", "HEARTBEAT_EVERY=1"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode != 0 and "Error 3" in done.stderr
    lines = done.stdout.splitlines()
    assert "finished" in lines
    assert any(line.startswith("  ... still probing (") for line in lines)
