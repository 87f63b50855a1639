"""The package's imports point down the layers of docs/architecture.md, and never in a circle.

Every module of ``jupyter_agent`` is parsed with :mod:`ast` (nothing is imported). An import
counts wherever it is written: at the top, inside a function (a lazy import is still a
dependency), or as a string naming a module of the package (``importlib.import_module(
"jupyter_agent.x")``, or a tuple of such names a loader walks). Imports under
``if TYPE_CHECKING:`` are exempt: they never run. Importing a submodule also runs its
package's ``__init__``; that implicit edge is not counted, only what the code writes.

Three checks:

* no import cycle between two or more modules (strongly connected components);
* no import from a lower layer to a higher one (the table :data:`LAYERS`, top to bottom);
* IPython, ipywidgets and anywidget are imported only by the edge and by ``ui/``.

The walker itself is proven on a small synthetic package (``test_walker_*``).
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "jupyter_agent"

# --------------------------------------------------------------------------- the layer table
# Top to bottom. A module may import from its own layer and from any layer below it.
# Patterns are paths relative to the package: "dir/" is everything under that folder,
# "name.py" one file, "_*.py" a glob. The most specific pattern wins (a file beats a folder,
# a longer folder beats a shorter one). A module no pattern matches fails the test: give every
# new module a layer here and in docs/architecture.md.
LAYERS: list[tuple[str, list[str]]] = [
    ("edge", [
        "edge/",                # the Jupyter edge package (its files are named below)
        "__init__.py",          # the public API, imported lazily
        "edge/magics.py",       # %%chat, %%toolloop, %%plan, %agent
        "edge/magic_args.py",   # IPython's magic_arguments decorators, typed
        "edge/commands/",       # every %agent command
        "replay/notebooks.py",  # tutorial helpers: run notebooks in kernels,
        "replay/rerecord.py",   # re-record their cassettes,
        "replay/compare.py",    # compare saved outputs
        "edge/demo.py",         # the demo notebooks
        "edge/batch_magic.py",  # --over on the three cell magics
        "edge/cell_options.py", # a cell's flags as one options record (plain cell and --over)
        "edge/live_comm.py",    # the live notebook comm, opened at %load_ext
        "edge/click_gate.py",   # a card's click waits for the running cell to end
    ]),
    ("acp", ["acp/"]),          # ACP both ways: our agent served over stdio, external agents in a cell
    ("batch", ["batch/"]),      # one agent over many inputs: runs agents, no IPython
    ("agents", ["agents/"]),    # chat, toolloop, plan, helpers, sub-agents; the turn driver
    ("ui", ["ui/"]),            # widgets and the live display; draw what view/ computes
    ("view", [
        "view/",                # events -> view state -> MIME bundle, pure Python
    ]),
    ("tracing", ["tracing/"]),  # events -> OpenTelemetry spans (only with tracing on)
    ("runtime", ["runtime/"]),  # policy data: named agents, modes, intent, permissions, catalog
    ("clients", [
        "clients/",             # model name -> client, failover, record/replay wrappers
        "replay/",              # the record/replay mode switch
    ]),
    ("loop", ["loop/"]),        # the kernel, its hooks, compression
    ("tools", ["tools/"]),      # @tool registry, schemas, built-ins, MCP
    ("sandbox", ["sandbox/"]),  # overlay runs, final-state check, held changes, undo
    ("llm", ["llm/"]),          # the OpenAI-compatible client, streaming, usage, tool protocols
    ("session", ["session/"]),  # the SQLite store
    ("base", ["base/"]),  # events, errors, config, secrets, state, flags, answers, helpers
]

GUI_PACKAGES = ("IPython", "ipywidgets", "anywidget")
"""Third-party packages only the edge and ``ui/`` may import (the rest runs in plain scripts)."""
GUI_LAYERS = frozenset({"edge", "ui"})


# --------------------------------------------------------------------------- the walker
@dataclass(frozen=True)
class Edge:
    """One import written in ``source`` (a module name) of ``target``."""

    source: str
    target: str
    line: int
    how: str
    """``import`` (top level), ``lazy`` (inside a function or class) or ``string``."""

    def __str__(self) -> str:
        note = "" if self.how == "import" else f" ({self.how})"
        return f"{self.source} -> {self.target}  [line {self.line}{note}]"


@dataclass
class Graph:
    """The modules of one package and the imports between them."""

    modules: dict[str, Path]
    """Module name -> file."""
    edges: list[Edge]
    """Imports of package modules by package modules (one per import statement and target)."""
    external: dict[str, set[str]]
    """Module name -> top-level names of the third-party packages it imports."""


def _module_names(root: Path, package: str) -> dict[str, Path]:
    """Every ``.py`` file of ``root/package`` by dotted module name (``__init__`` = package)."""
    out: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, depth: int = 0):
    """Yield ``(node, inside_a_def)`` for every node, skipping ``if TYPE_CHECKING:`` bodies."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.orelse:
                yield stmt, depth > 0
                yield from _walk(stmt, depth)
            continue
        yield child, depth > 0
        inner = depth + isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                           ast.Lambda))
        yield from _walk(child, inner)


def _resolve_from(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of ``from <level dots><name> import ...`` written in ``module``."""
    if level == 0:
        return name or ""
    base = module if is_package else module.rpartition(".")[0]
    for _ in range(level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{name}" if name else base


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """``name`` or its nearest parent that is a module of the package (None: none is)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _module_imports(name: str, path: Path, modules: dict[str, Path],
                    package: str) -> tuple[list[Edge], set[str]]:
    """The package modules one module imports (one edge per target and kind), and the
    top-level names of the third-party packages it imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: dict[tuple[str, str], Edge] = {}
    external: set[str] = set()

    def add(target: str | None, line: int, how: str) -> None:
        if target is not None and target != name:
            found.setdefault((target, how), Edge(name, target, line, how))

    for node, lazy in _walk(tree):
        how = "lazy" if lazy else "import"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == package:
                    add(_known(alias.name, modules), node.lineno, how)
                else:
                    external.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(name, is_package, node.level, node.module)
            if base.split(".")[0] != package:
                external.add(base.split(".")[0])
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in modules else _known(base, modules), node.lineno, how)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and node.value in modules and node.value.startswith(package + ".")):
            # A module named in a string: importlib.import_module("jupyter_agent.x").
            add(node.value, node.lineno, "string")
    return list(found.values()), external


def build_graph(root: Path, package: str) -> Graph:
    """Parse every module of ``root/package`` and collect its imports."""
    modules = _module_names(root, package)
    edges: list[Edge] = []
    external: dict[str, set[str]] = {}
    for name, path in modules.items():
        found, names = _module_imports(name, path, modules, package)
        edges.extend(found)
        if names:
            external[name] = names
    return Graph(modules, edges, external)


def import_components(graph: Graph) -> list[list[str]]:
    """The strongly connected components of two or more modules, each sorted, in order."""
    succ = _successors(graph)
    # Tarjan's algorithm, iteratively (the graph may be deeper than the recursion limit).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for start in sorted(succ):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            if i < len(succ[node]):
                work.append((node, i + 1))
                nxt = succ[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    components.append(sorted(comp))
    return sorted(components)


def find_cycles(graph: Graph) -> list[list[str]]:
    """One cycle through each component of :func:`import_components`.

    The cycle starts at the component's first module and follows imports back to it, so a
    report reads ``a -> b -> c -> a``; the component may hold more modules than the cycle.
    """
    succ = _successors(graph)
    return [_cycle_through(comp, succ) for comp in import_components(graph)]


def _successors(graph: Graph) -> dict[str, list[str]]:
    succ: dict[str, list[str]] = {m: [] for m in graph.modules}
    for e in graph.edges:
        if e.target not in succ[e.source]:
            succ[e.source].append(e.target)
    return succ


def _cycle_through(component: list[str], succ: dict[str, list[str]]) -> list[str]:
    """The shortest import path from the component's first module back to itself."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in succ[node]:
            if nxt not in members:
                continue
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"no cycle found in component {component}")  # pragma: no cover


def _relative_path(module: str, graph: Graph, root: Path, package: str) -> str:
    return graph.modules[module].relative_to(root / package).as_posix()


def _specificity(pattern: str) -> tuple[int, int]:
    exact = not pattern.endswith("/") and not any(c in pattern for c in "*?[")
    return (2 if exact else 1 if pattern.endswith("/") else 0, len(pattern))


def layer_of(rel_path: str, layers: list[tuple[str, list[str]]]) -> str | None:
    """The layer whose most specific pattern matches ``rel_path`` (None: no pattern does)."""
    best: tuple[tuple[int, int], str] | None = None
    for layer, patterns in layers:
        for p in patterns:
            if p.endswith("/"):
                hit = rel_path.startswith(p)
            elif any(c in p for c in "*?["):
                hit = "/" not in rel_path and fnmatch.fnmatchcase(rel_path, p)
            else:
                hit = rel_path == p
            if hit and (best is None or _specificity(p) > best[0]):
                best = (_specificity(p), layer)
    return None if best is None else best[1]


def layer_report(graph: Graph, root: Path, package: str,
                 layers: list[tuple[str, list[str]]]) -> tuple[list[str], list[Edge]]:
    """(modules with no layer, imports that go from a lower layer up to a higher one)."""
    rank = {name: len(layers) - i for i, (name, _) in enumerate(layers)}
    where = {m: layer_of(_relative_path(m, graph, root, package), layers) for m in graph.modules}
    unmapped = sorted(m for m, layer in where.items() if layer is None)
    upward = [e for e in graph.edges
              if where[e.source] and where[e.target]
              and rank[where[e.source]] < rank[where[e.target]]]  # type: ignore[index]
    return unmapped, sorted(upward, key=lambda e: (e.source, e.target))


def gui_violations(graph: Graph, root: Path, package: str,
                   layers: list[tuple[str, list[str]]]) -> list[str]:
    """Modules outside :data:`GUI_LAYERS` that import one of :data:`GUI_PACKAGES`."""
    bad = []
    for module, names in sorted(graph.external.items()):
        layer = layer_of(_relative_path(module, graph, root, package), layers)
        used = sorted(n for n in names if n in GUI_PACKAGES)
        if used and layer not in GUI_LAYERS:
            bad.append(f"{module} ({layer}) imports {', '.join(used)}")
    return bad


def _describe(e: Edge, graph: Graph, root: Path, package: str,
              layers: list[tuple[str, list[str]]]) -> str:
    src = layer_of(_relative_path(e.source, graph, root, package), layers)
    dst = layer_of(_relative_path(e.target, graph, root, package), layers)
    return f"{e}  ({src} -> {dst})"


# --------------------------------------------------------------------------- the checks
def _graph() -> Graph:
    return build_graph(ROOT, PACKAGE)


def test_every_module_has_a_layer() -> None:
    unmapped, _ = layer_report(_graph(), ROOT, PACKAGE, LAYERS)
    if unmapped:
        pytest.fail("modules with no layer (add them to LAYERS):\n" + "\n".join(unmapped),
                    pytrace=False)


def test_no_import_cycles() -> None:
    graph = _graph()
    components = import_components(graph)
    report = []
    for comp, cycle in zip(components, find_cycles(graph)):
        inside = [str(e) for e in graph.edges if e.source in comp and e.target in comp]
        report.append(f"cycle: {' -> '.join(cycle)}\n  {len(comp)} modules, imports among "
                      "them:\n    " + "\n    ".join(sorted(inside)))
    if components:
        pytest.fail(f"{len(components)} import cycle(s):\n" + "\n".join(report), pytrace=False)


def test_no_upward_imports() -> None:
    graph = _graph()
    _, upward = layer_report(graph, ROOT, PACKAGE, LAYERS)
    if upward:
        pytest.fail(f"{len(upward)} import(s) up a layer:\n" + "\n".join(
            _describe(e, graph, ROOT, PACKAGE, LAYERS) for e in upward), pytrace=False)


def test_gui_packages_only_at_the_edge() -> None:
    bad = gui_violations(_graph(), ROOT, PACKAGE, LAYERS)
    if bad:
        pytest.fail("GUI imports below the edge:\n" + "\n".join(bad), pytrace=False)


# --------------------------------------------------------------------------- the walker, proven
_SYNTHETIC_LAYERS: list[tuple[str, list[str]]] = [
    ("top", ["top.py", "__init__.py"]),
    ("middle", ["mid/"]),
    ("bottom", ["low.py", "_*.py"]),
]


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_walker_finds_cycles_upward_imports_and_respects_type_checking(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/top.py": "from .mid import a\n",
        # a <-> b through a lazy import; no __init__ in mid/ (a namespace package)
        "pkg/mid/a.py": "from . import b\n",
        "pkg/mid/b.py": "def f():\n    from .a import thing\n    return thing\n",
        # low imports up twice: at the top (relative, two dots from a sub-module) and by
        # string; the TYPE_CHECKING import and the import of a third-party package do not count
        "pkg/low.py": (
            "from typing import TYPE_CHECKING\nimport json\n"
            "from .top import x\n"
            "if TYPE_CHECKING:\n    from .mid.a import T\nelse:\n    from ._util import y\n"
            "def load():\n    import importlib\n"
            "    return importlib.import_module('pkg.mid.b')\n"
        ),
        "pkg/_util.py": "import IPython\n",
    })
    graph = build_graph(tmp_path, "pkg")
    assert set(graph.modules) == {"pkg", "pkg.top", "pkg.mid.a", "pkg.mid.b", "pkg.low",
                                  "pkg._util"}
    pairs = {(e.source, e.target, e.how) for e in graph.edges}
    assert ("pkg.mid.b", "pkg.mid.a", "lazy") in pairs
    assert ("pkg.low", "pkg.mid.b", "string") in pairs
    assert ("pkg.low", "pkg._util", "import") in pairs  # the else branch runs
    assert not any(t == "pkg.mid.a" and s == "pkg.low" for s, t, _ in pairs)  # TYPE_CHECKING
    assert graph.external["pkg.low"] >= {"json", "typing"}

    assert find_cycles(graph) == [["pkg.mid.a", "pkg.mid.b", "pkg.mid.a"]]

    unmapped, upward = layer_report(graph, tmp_path, "pkg", _SYNTHETIC_LAYERS)
    assert unmapped == []
    assert {(e.source, e.target) for e in upward} == {("pkg.low", "pkg.top"),
                                                      ("pkg.low", "pkg.mid.b")}
    assert gui_violations(graph, tmp_path, "pkg", _SYNTHETIC_LAYERS) == [
        "pkg._util (bottom) imports IPython"]
    assert layer_of("_util.py", _SYNTHETIC_LAYERS) == "bottom"
    assert layer_of("mid/_x.py", _SYNTHETIC_LAYERS) == "middle"  # globs match top level only


def test_walker_reports_an_unmapped_module_and_a_long_cycle(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pkg/__init__.py": "import pkg.top\n",
        "pkg/top.py": "import pkg.low as low\n",
        "pkg/low.py": "from pkg import extra\n",
        "pkg/extra.py": "from pkg import top\n",  # no layer for extra.py
    })
    graph = build_graph(tmp_path, "pkg")
    unmapped, upward = layer_report(graph, tmp_path, "pkg", _SYNTHETIC_LAYERS)
    assert unmapped == ["pkg.extra"]
    assert upward == []  # an edge to or from an unmapped module has no direction to judge
    assert find_cycles(graph) == [["pkg.extra", "pkg.top", "pkg.low", "pkg.extra"]]
