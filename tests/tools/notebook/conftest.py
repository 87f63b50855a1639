"""A real IPython shell for the notebook tools' tests (the same one tests/magics uses)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def ipshell() -> Any:
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython() or get_ipython()  # None when another test started it already
    assert shell is not None
    return shell


@pytest.fixture
def shell(ipshell: Any) -> Iterator[Any]:
    """The shell, with the names a test defined removed afterwards."""
    before = set(ipshell.user_ns)
    yield ipshell
    for name in set(ipshell.user_ns) - before:
        ipshell.user_ns.pop(name, None)
