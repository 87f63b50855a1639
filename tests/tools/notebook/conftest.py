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
    """The shell with an empty user namespace: names other test modules left in the shared
    shell are set aside (the notebook tools list what they find), and put back afterwards
    with the names this test defined removed."""
    ns, hidden = ipshell.user_ns, ipshell.user_ns_hidden
    left = {k: ns.pop(k) for k in list(ns) if k not in hidden and not k.startswith("_")}
    before = set(ns)
    yield ipshell
    for name in set(ns) - before:
        ns.pop(name, None)
    ns.update(left)
