"""Re-record a notebook's cassette against a model: one command.

    python -m jupyter_agent.replay.rerecord notebooks/02-tools.ipynb --model gpt-4.1-mini

The notebook is executed headless (nbclient, a kernel of this Python, the notebook's folder as
working directory) with its ``%agent replay <cassette>`` line switched to recording. Every
model call and every answer given by a cell (``%agent resume``, ``--option``) goes into a new
cassette, which replaces the old one (in the notebook's metadata, or the JSON file the line
names). The executed notebook, with the outputs of the recording, is written back in place.
The key comes from the environment as usual (``OPENAI_API_KEY``…); it is never written.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from ..base.errors import ConfigError
from ..clients.cassette import Cassette
from ..clients.storage import METADATA_KEY, is_notebook, load_cassette, save_cassette
from .notebooks import (
    cassette_of,
    execute_notebook,
    find_cassette_line,
    require_notebook_tools,
    scrub_folder,
    set_cassette_line,
)

__all__ = ["rerecord", "main"]


def rerecord(notebook: str | Path, *, model: str | None = None,
             env: dict[str, str] | None = None, timeout: int = 600) -> Cassette:
    """Execute ``notebook`` in record mode and store the new cassette and outputs.

    Args:
        notebook: The notebook; it must hold a ``%agent replay <cassette>`` line.
        model: The model to record with (default: the configured one, e.g. from
            ``JUPYTER_AGENT_MODEL``).
        env: Extra environment for the kernel (``OPENAI_BASE_URL``, a key…).
        timeout: Seconds allowed per cell.

    Returns:
        The new :class:`~jupyter_agent.clients.cassette.Cassette`.

    Raises:
        ValueError: the notebook has no cassette line.
        nbclient.exceptions.CellExecutionError: a cell failed (nothing is written then).
    """
    import nbformat

    path = Path(notebook).resolve()
    nb = nbformat.read(str(path), as_version=4)
    target = cassette_of(nb, path)
    if target is None:
        raise ValueError(f"{path.name}: the `%agent replay` line names no cassette")
    kernelspec = nb.metadata.get("kernelspec")
    with tempfile.TemporaryDirectory(prefix="jupyter-agent-rerecord-") as tmp:
        recording = Path(tmp) / "recording.cassette.json"
        line = f"%agent record {recording}" + (f" --model {model}" if model else "")
        original = set_cassette_line(nb, line)
        execute_notebook(nb, path.parent, env=env, timeout=timeout)
        cassette = load_cassette(recording)
    index, _ = find_cassette_line(nb) or (None, "")
    set_cassette_line(nb, original)
    if index is not None:
        # Its output names the temporary recording file: a replay prints its own line.
        nb.cells[index].outputs = []
    scrub_folder(nb, path.parent)  # e.g. an approval card shows its working directory
    if kernelspec is not None:
        nb.metadata["kernelspec"] = kernelspec
    nb.metadata.pop("widgets", None)
    data = json.loads(cassette.model_dump_json())
    if is_notebook(target) and target.resolve() == path:
        nb.metadata.setdefault(METADATA_KEY, {})["cassette"] = data
        nbformat.write(nb, str(path))
    else:
        nbformat.write(nb, str(path))
        if is_notebook(target):
            cassette.location = str(target)
        save_cassette(cassette, target)
    return cassette


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_agent.replay.rerecord",
        description="Re-record a notebook's cassette by executing it against a model.")
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--model", help="Model or profile name (default: the configured one).")
    parser.add_argument("--base-url", help="OpenAI-compatible base URL (else OPENAI_BASE_URL).")
    parser.add_argument("--timeout", type=int, default=600, help="Seconds allowed per cell.")
    args = parser.parse_args(argv)
    try:
        require_notebook_tools()
    except ConfigError as exc:  # a plain install: one line, the extra to install
        raise SystemExit(str(exc)) from None
    env = {"OPENAI_BASE_URL": args.base_url} if args.base_url else None
    for nb in args.notebooks:
        cassette = rerecord(nb, model=args.model, env=env, timeout=args.timeout)
        print(f"{nb}: recorded {len(cassette.interactions)} model call(s) and "
              f"{len(cassette.answers)} answer(s) with {cassette.model}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
