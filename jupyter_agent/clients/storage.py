"""Where cassettes live: a notebook's metadata, or a JSON file beside the notebook.

A path ending in ``.ipynb`` means the notebook's ``metadata["jupyter_agent"]["cassette"]``
(nothing else in the notebook changes; the file is read and written as the plain JSON of the
nbformat 4 format, because importing nbformat costs seconds in a kernel). Every other path is a
JSON file. Writes are atomic (temporary file, then rename) and masked: every known secret
(:func:`jupyter_agent.base.secrets.mask`, docs/security.md) is replaced before anything is written.

Recording into a notebook that is open in JupyterLab rewrites the file under the editor's
feet (saving from the editor then drops the cassette): while working, record into the JSON
file beside it (the default); ``rerecord`` writes into the notebook itself.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..base.errors import ConfigError
from ..base.jsontypes import JSONObject, JSONValue, as_object, object_field
from ..base.secrets import mask_json
from .cassette import Cassette

__all__ = ["METADATA_KEY", "load_cassette", "save_cassette", "cassette_path_for",
           "default_cassette_path", "is_notebook", "write_notebook_json"]

METADATA_KEY = "jupyter_agent"
"""The notebook metadata entry holding ``{"cassette": {...}}``."""


def is_notebook(path: str | Path) -> bool:
    """Whether ``path`` names a notebook (the cassette is then in its metadata)."""
    return str(path).endswith(".ipynb")


def cassette_path_for(notebook: str | Path) -> Path:
    """The JSON file beside ``notebook``: ``<name>.cassette.json``."""
    p = Path(notebook)
    return p.with_name(p.stem + ".cassette.json")


def default_cassette_path() -> Path:
    """The cassette used when none is named: beside the running notebook when Jupyter says
    which one it is (``JPY_SESSION_NAME``), else ``jupyter-agent.cassette.json`` here."""
    session = os.environ.get("JPY_SESSION_NAME")
    if session and session.endswith(".ipynb"):
        return cassette_path_for(Path(session).name)
    return Path("jupyter-agent.cassette.json")


def load_cassette(path: str | Path) -> Cassette:
    """The cassette stored at ``path`` (an empty one when nothing is stored there yet)."""
    p = Path(path)
    data: JSONValue = None
    if p.exists():
        if is_notebook(p):
            nb: JSONValue = json.loads(p.read_text(encoding="utf-8"))
            meta = object_field(as_object(nb) or {}, "metadata")
            data = object_field(meta, METADATA_KEY).get("cassette")
        else:
            text = p.read_text(encoding="utf-8")
            data = json.loads(text) if text.strip() else None
    cassette = Cassette.model_validate(_plain(data)) if data else Cassette()
    cassette.location = str(p)
    return cassette


def save_cassette(cassette: Cassette, path: str | Path | None = None) -> Path:
    """Write ``cassette`` to ``path`` (default: where it was loaded from)."""
    p = Path(path or cassette.location)
    # One save at a time, snapshot and write together: parallel tool threads record too, and
    # an older snapshot must never land after a newer one.
    with cassette._lock:
        data = json.loads(mask_json(cassette.model_dump_json()))
        if is_notebook(p):
            nb: JSONObject = (
                json.loads(p.read_text(encoding="utf-8")) if p.exists() else
                {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
            _entry(_entry(nb, "metadata", p), METADATA_KEY, p)["cassette"] = data
            _atomic_write(p, write_notebook_json(nb))
        else:
            _atomic_write(p, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return p


def _entry(obj: JSONObject, key: str, path: Path) -> JSONObject:
    """``obj[key]``, an object (made empty when absent).

    Raises:
        ConfigError: the entry is something else (the notebook is not overwritten).
    """
    value = obj.setdefault(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path.name}: its {key!r} is not a JSON object; the cassette was "
                          "not saved in it")
    return value


def write_notebook_json(nb: Mapping[str, object]) -> str:
    """A notebook as nbformat writes it (1-space indent, sorted keys, trailing newline)."""
    return json.dumps(nb, indent=1, sort_keys=True, separators=(",", ": "),
                      ensure_ascii=False) + "\n"


def _plain(value: JSONValue) -> JSONValue:
    """nbformat's NotebookNode dicts as plain dicts (pydantic validates them either way, but
    the chunk payloads must be plain JSON for the stream assembler)."""
    plain: JSONValue = json.loads(json.dumps(value))
    return plain


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        # mkstemp makes the file private; keep the mode the file had (or the usual one).
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
