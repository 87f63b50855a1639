"""Every name a package exports lazily (PEP 562, ``base/lazy.py``) resolves.

``jupyter_agent.clients.TurnClient`` and ``bind_client`` pointed at a module renamed since
(``clients.turn``, now ``clients.turn_client``): the attribute raised ModuleNotFoundError on
first use. The packages now also import their names for the type checker, which checks them.
"""

from __future__ import annotations

import importlib

import pytest

LAZY_PACKAGES = ["jupyter_agent.batch", "jupyter_agent.clients", "jupyter_agent.loop.compress",
                 "jupyter_agent.runtime", "jupyter_agent.sandbox", "jupyter_agent.tools.builtin",
                 "jupyter_agent.tools.notebook", "jupyter_agent.tools.skills"]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    broken = []
    for name in module.__all__:
        try:
            getattr(module, name)
        except Exception as exc:  # noqa: BLE001 - any failure is a broken export
            broken.append(f"{name}: {type(exc).__name__}: {exc}")
    assert broken == []
