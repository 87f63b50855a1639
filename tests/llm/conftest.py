"""Markers of the model-client tests."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Declare ``local_model``: tests that start the embedded llama.cpp model."""
    config.addinivalue_line(
        "markers", "local_model: starts the embedded local model (needs the `local` extra)"
    )
