"""Every import of the package resolves from a dependency that ``pyproject.toml`` declares.

The imports are read with ``ast`` from every module of ``jupyter_agent`` (lazy ones inside
functions included) and mapped to distributions with ``importlib.metadata``. An import must
come from a core dependency, unless it is *optional*: guarded by ``try/except ImportError``
whose handler raises an error naming the extra to install (``jupyter-agent[mcp]``), in which
case that extra must bring it. A guarded import whose handler falls back to something else
(``httpx2``, else ``httpx``) may be missing; the fallback itself is checked like any import.
Imports under ``if TYPE_CHECKING:`` never run and are skipped.

A test environment hides a missing declaration (``mcp`` in the test extra brought ``httpx``,
which the plain install lacked), so this reads the declarations, not the environment.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the test venv has it

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "jupyter_agent"
_EXTRA_IN_TEXT = re.compile(r"jupyter-agent\[([\w,-]+)\]")
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


@dataclass(frozen=True)
class Found:
    """One import statement of a third-party module."""

    where: str
    top: str
    guard: str
    """``none``, ``fallback`` (the handler carries on) or ``optional`` (the handler raises)."""
    extras: frozenset[str] = frozenset()
    """Extras the raising handler tells the user to install."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(spec: str) -> str:
    return _norm(re.split(r"[\s\[<>=!~;@(]", spec.strip(), maxsplit=1)[0])


def declared(pyproject: Path) -> tuple[set[str], dict[str, set[str]]]:
    """Core distribution names and, per extra, the names it adds (normalised)."""
    project = tomllib.loads(pyproject.read_text("utf-8"))["project"]
    core = {_requirement_name(r) for r in project.get("dependencies", [])}
    extras = {extra: {_requirement_name(r) for r in reqs}
              for extra, reqs in project.get("optional-dependencies", {}).items()}
    return core, extras


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type
    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return any(isinstance(n, ast.Name) and n.id in _IMPORT_ERRORS for n in names)


def _strings(node: ast.AST) -> str:
    return " ".join(n.value for n in ast.walk(node)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Walker(ast.NodeVisitor):
    def __init__(self, where: str, package: str) -> None:
        self.where = where
        self.package = package
        self.guards: list[tuple[str, frozenset[str]]] = []
        self.found: list[Found] = []

    def _add(self, name: str, line: int) -> None:
        top = name.split(".")[0]
        if top in sys.stdlib_module_names or top in ("__future__", self.package):
            return
        guard, extras = self.guards[-1] if self.guards else ("none", frozenset())
        self.found.append(Found(f"{self.where}:{line}", top, guard, extras))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._add(node.module, node.lineno)

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        handlers = [h for h in node.handlers if h.type is not None and _catches_import_error(h)]
        if handlers:
            raising = [h for h in handlers if any(isinstance(n, ast.Raise) for n in ast.walk(h))]
            extras = frozenset(e for h in raising
                               for group in _EXTRA_IN_TEXT.findall(_strings(h))
                               for e in group.split(","))
            self.guards.append(("optional", extras) if raising else ("fallback", frozenset()))
            for child in node.body:
                self.visit(child)
            self.guards.pop()
        else:
            for child in node.body:
                self.visit(child)
        for child in [*node.handlers, *node.orelse, *node.finalbody]:
            self.visit(child)

    visit_TryStar = visit_Try


def third_party_imports(package_dir: Path) -> Iterator[Found]:
    """Every third-party import statement in the ``.py`` files under ``package_dir``."""
    for path in sorted(package_dir.rglob("*.py")):
        walker = _Walker(str(path.relative_to(package_dir.parent)), package_dir.name)
        walker.visit(ast.parse(path.read_text("utf-8"), filename=str(path)))
        yield from walker.found


HOST_LOADED = ("jupyter_agent/acp/persona.py",)
"""Modules only a host application imports, which brings what they import: jupyter-ai's persona
manager loads the persona (its entry point), and nothing of ours imports it."""


def undeclared(package_dir: Path, core: set[str], extras: Mapping[str, set[str]],
               dists: Mapping[str, list[str]]) -> list[str]:
    """What is wrong, one line per import; empty when every import resolves as declared."""
    found = [f for f in third_party_imports(package_dir)
             if not f.where.startswith(HOST_LOADED)]
    # A module guarded as optional anywhere is optional everywhere: the other imports of it
    # sit behind that guard (MCPServer's methods run only after connect_mcp checked).
    optional: dict[str, set[str]] = {}
    for f in found:
        if f.guard == "optional":
            optional.setdefault(f.top, set()).update(f.extras)
    problems = []
    for f in found:
        names = {_norm(d) for d in dists.get(f.top, [])}
        if f.guard == "fallback" and f.top not in optional:
            continue  # the code carries on without it
        if not names:
            problems.append(f"{f.where}: {f.top} is imported but no installed distribution "
                            "provides it")
        elif f.top in optional:
            named = optional[f.top]
            if not named:
                problems.append(f"{f.where}: the ImportError guard of {f.top} names no extra "
                                "(\"pip install 'jupyter-agent[EXTRA]'\")")
            elif not names & set().union(*(extras.get(e, set()) for e in named)):
                problems.append(f"{f.where}: {f.top} ({', '.join(sorted(names))}) is not in "
                                f"the extra its guard names: {', '.join(sorted(named))}")
        elif not names & core:
            problems.append(f"{f.where}: {f.top} ({', '.join(sorted(names))}) is imported "
                            "without a guard but is not a core dependency")
    return problems


# ---------------------------------------------------------------------------- the real package
def test_every_import_of_the_package_resolves_from_declared_dependencies() -> None:
    core, extras = declared(ROOT / "pyproject.toml")
    found = list(third_party_imports(ROOT / PACKAGE))
    # The walk sees the lazy imports too, or it would check nothing that matters.
    tops = {f.top for f in found}
    assert {"openai", "pydantic", "IPython", "httpx", "mcp", "nbclient"} <= tops
    assert undeclared(ROOT / PACKAGE, core, extras, packages_distributions()) == []


def test_web_fetch_and_the_sdk_need_no_extra() -> None:
    """The plain install's ``web_fetch`` imports httpx: a core dependency, not a test one."""
    core, extras = declared(ROOT / "pyproject.toml")
    assert "httpx" in core and "openai" in core
    assert "mcp" not in core and "mcp" in extras["mcp"]


# ---------------------------------------------------------------------------- the checker itself
def _package(tmp_path: Path, source: str) -> Path:
    pkg = tmp_path / PACKAGE
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(textwrap.dedent(source))
    return pkg


DISTS = {"requests": ["requests"], "httpx": ["httpx"], "mcp": ["mcp"], "yaml": ["PyYAML"],
         "typing_extensions": ["typing_extensions"]}
CORE = {"httpx"}
EXTRAS = {"mcp": {"mcp"}, "local": {"pyyaml"}}


@pytest.mark.parametrize(("source", "expected"), [
    # An undeclared import inside a function is still an import a user's call will run.
    ("def f():\n    import requests\n", "requests (requests) is imported without a guard"),
    # A dependency of a dependency (mcp brings httpx) is not a declaration.
    ("import mcp\n", "mcp (mcp) is imported without a guard"),
    # A guard that raises but does not say which extra to install.
    ("try:\n    import mcp\nexcept ImportError:\n    raise RuntimeError('no mcp')\n",
     "names no extra"),
    # A guard that names the wrong extra.
    ("try:\n    import mcp\nexcept ImportError:\n"
     "    raise RuntimeError(\"pip install 'jupyter-agent[local]'\")\n",
     "not in the extra its guard names: local"),
    # Catching the wrong exception is no guard.
    ("try:\n    import mcp\nexcept KeyError:\n    mcp = None\n", "imported without a guard"),
    # A module nothing provides.
    ("import no_such_module_anywhere\n", "no installed distribution provides it"),
])
def test_the_checker_reports_an_undeclared_import(tmp_path: Path, source: str,
                                                  expected: str) -> None:
    problems = undeclared(_package(tmp_path, source), CORE, EXTRAS, DISTS)
    assert len(problems) == 1 and expected in problems[0], problems
    assert problems[0].startswith(f"{PACKAGE}/mod.py:")


def test_the_checker_accepts_guards_fallbacks_and_type_only_imports(tmp_path: Path) -> None:
    pkg = _package(tmp_path, """\
        from typing import TYPE_CHECKING
        import httpx
        if TYPE_CHECKING:
            import typing_extensions
        try:
            import httpx2
        except ImportError:
            import httpx as httpx2
        def connect():
            try:
                import mcp
            except ImportError:
                raise RuntimeError("MCP needs the mcp package: pip install 'jupyter-agent[mcp]'")
        def later():
            from mcp.client import stdio  # behind connect()'s guard
        """)
    found = {(f.top, f.guard) for f in third_party_imports(pkg)}
    assert found == {("httpx", "none"), ("httpx2", "fallback"), ("mcp", "optional"),
                     ("mcp", "none")}
    assert undeclared(pkg, CORE, EXTRAS, DISTS) == []
