"""The package's rooms: nothing loose at its root, no private name imported across packages.

docs/architecture.md: every module lives in a package named for its layer (``edge/``,
``base/``, ...); only ``__init__.py`` (and ``__main__.py``) sit at the root. A package that
needs another's private name (``_x``, a module or an attribute) asks its owner for a public
one. Both checks parse the files (nothing is imported), ``if TYPE_CHECKING:`` imports included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "jupyter_agent"
ROOT_FILES = {"__init__.py", "__main__.py"}


def loose_modules(package_dir: Path) -> list[str]:
    """Modules at the package root other than ``__init__.py`` and ``__main__.py``."""
    return sorted(p.name for p in package_dir.glob("*.py") if p.name not in ROOT_FILES)


def _module(root: Path, path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def private_imports(root: Path, package: str) -> list[str]:
    """``file:line: name`` for each import of a private name owned by another package.

    A name ``a.b._c.d`` is private from ``_c`` on, and owned by ``a.b``; a module of ``a.b``
    or below may import it, anyone else may not.
    """
    out = []
    for path in sorted((root / package).rglob("*.py")):
        module, is_package = _module(root, path)
        here = module if is_package else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here
                    for _ in range(node.level - 1):
                        base = base.rpartition(".")[0]
                    target = f"{base}.{node.module}" if node.module else base
                else:
                    target = node.module or ""
                names = [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for full in names:
                if not (full == package or full.startswith(package + ".")):
                    continue
                parts = full.split(".")
                for i, part in enumerate(parts):
                    if part.startswith("_") and not part.startswith("__"):
                        owner = ".".join(parts[:i])
                        if here != owner and not here.startswith(owner + "."):
                            rel = path.relative_to(root)
                            out.append(f"{rel}:{node.lineno}: {full}")
                        break
    return out


def test_nothing_loose_at_the_package_root() -> None:
    loose = loose_modules(ROOT / PACKAGE)
    if loose:
        pytest.fail("modules loose at the package root (move them into a package, "
                    "docs/architecture.md):\n" + "\n".join(loose), pytrace=False)


def test_no_private_name_is_imported_across_packages() -> None:
    bad = private_imports(ROOT, PACKAGE)
    if bad:
        pytest.fail("private names imported from another package (ask the owner for a "
                    "public one):\n" + "\n".join(bad), pytrace=False)


def test_the_checks_catch_a_loose_module_and_a_private_import(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "a").mkdir(parents=True)
    (pkg / "b").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "loose.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("")
    (pkg / "a" / "_secret.py").write_text("X = 1\n")
    (pkg / "a" / "own.py").write_text("from ._secret import X\n")  # its own package: fine
    (pkg / "b" / "__init__.py").write_text("")
    (pkg / "b" / "user.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from ..a._secret import X\n"
        "from pkg.a import _secret\n"
        "import pkg.a._secret\n"
        "if TYPE_CHECKING:\n    from ..a.own import _hidden\n")
    assert loose_modules(pkg) == ["loose.py"]
    assert private_imports(tmp_path, "pkg") == [
        "pkg/b/user.py:2: pkg.a._secret.X",
        "pkg/b/user.py:3: pkg.a._secret",
        "pkg/b/user.py:4: pkg.a._secret",
        "pkg/b/user.py:6: pkg.a.own._hidden",
    ]
