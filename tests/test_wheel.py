"""The wheel ships the prebuilt JupyterLab extension (users need no Node) and the widget assets."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = "jupyter_agent-{v}.data/data/share/jupyter/labextensions/jupyter-agent/"


@pytest.mark.skipif(not (ROOT / "jupyter_agent/labextension/static").is_dir(),
                    reason="the labextension is not built (make install builds it)")
def test_the_wheel_carries_the_prebuilt_labextension(tmp_path: Path) -> None:
    from jupyter_agent import __version__

    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
                    "--no-deps", "-w", str(tmp_path), str(ROOT)], check=True)
    (wheel,) = tmp_path.glob("jupyter_agent-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    ext = EXT.format(v=__version__)
    assert ext + "package.json" in names and ext + "install.json" in names
    assert any(n.startswith(ext + "static/remoteEntry.") for n in names)
    for asset in ("render.js", "widget.js", "markdown.js", "run.css"):
        assert f"jupyter_agent/ui/static/{asset}" in names
    assert not any(n.startswith("tests/") for n in names)
