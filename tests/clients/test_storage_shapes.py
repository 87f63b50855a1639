"""A notebook whose metadata is not a JSON object: no crash on load, no overwrite on save."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_agent.base.errors import ConfigError
from jupyter_agent.clients.cassette import Cassette
from jupyter_agent.clients.storage import load_cassette, save_cassette


def _notebook(path: Path, metadata: object) -> str:
    text = json.dumps({"cells": [], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})
    path.write_text(text, encoding="utf-8")
    return text


def test_metadata_that_is_no_object_loads_as_no_cassette(tmp_path: Path) -> None:
    nb = tmp_path / "odd.ipynb"
    _notebook(nb, ["not", "an", "object"])
    # Before: AttributeError ('list' object has no attribute 'get').
    cassette = load_cassette(nb)
    assert cassette.interactions == [] and cassette.location == str(nb)


def test_saving_into_such_a_notebook_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    nb = tmp_path / "odd.ipynb"
    before = _notebook(nb, {"jupyter_agent": "a string someone put there"})
    cassette = Cassette()
    cassette.add({"model": "m", "messages": []}, response={"choices": []})
    # Before: AttributeError ('str' object has no attribute '__setitem__').
    with pytest.raises(ConfigError, match="odd.ipynb: its 'jupyter_agent' is not a JSON object"):
        save_cassette(cassette, nb)
    assert nb.read_text(encoding="utf-8") == before
