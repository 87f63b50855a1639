"""Names a package exports without importing their modules until first use.

``import jupyter_agent`` must stay cheap (a notebook pays for it at ``%load_ext``), so packages
re-export names lazily (PEP 562): the package's ``__getattr__`` imports the defining module on
first access and caches the value in the package's namespace, so the hook runs once per name.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence

from .fresh_stack import preimport

__all__ = ["lazy_exports"]


def lazy_exports(package: str, table: Mapping[str, str | tuple[str, str | None]],
                 exported: Sequence[str], *, entry: bool = False,
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``.

    Each entry of ``table`` names where an attribute lives: ``"submodule"`` (relative to the
    package, same attribute name) or ``("absolute.module", "attribute")``; attribute ``None``
    is the module itself. ``exported`` is what ``dir()`` lists (the package's ``__all__``).
    ``entry`` marks the package users import: its first access to a name imports the agent
    layer, so that import takes :func:`~._fresh_stack.preimport` (a fresh stack, its objects
    straight to the collector's oldest generation); a subpackage's names stay plain imports.
    """

    # ``object``: whatever the module holds. The packages declare their names for the type
    # checker themselves (imports under ``TYPE_CHECKING``), so this hook is never what types
    # an attribute.
    def __getattr__(name: str) -> object:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, attr = ((f"{package}.{target}", name) if isinstance(target, str)
                             else target)
        if entry:
            preimport(module_name)
        module = importlib.import_module(module_name)  # a dictionary lookup after preimport
        value = getattr(module, attr) if attr else module
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(exported)

    return __getattr__, __dir__
