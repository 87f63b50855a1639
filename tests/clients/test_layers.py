"""The model layer's arrows point down: walks every import (lazy ones included) with ``ast``.

Layers, top to bottom: the edge (``edge/``, ``replay/``), ``agents/``, ``ui/``,
``runtime/``, ``clients/``, ``loop/``, ``tools/``, ``llm/``, ``session/``, and the ground
(``base/``: config, events, errors, secrets, answers, state and the helpers).
These tests hold the part that
the client factory re-cut; the whole-package rule is wider than this file.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "jupyter_agent"
GROUND = {"base"}
ABOVE_CLIENTS = {"agents", "ui", "runtime", "replay", "edge"}


def _modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports, anywhere in its body."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # ``if TYPE_CHECKING:`` imports never run: they are not arrows (as in tests/test_layers.py).
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module
                       for a in node.names]
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {m: _imports(m, p, known) for m, p in known.items()}


def _layer(module: str) -> str:
    parts = module.split(".")
    layer = parts[1] if len(parts) > 1 else ""
    return "_state" if layer.startswith("_") and len(parts) == 2 else layer  # ground: _*.py


def test_the_client_layer_imports_only_what_lies_below_it() -> None:
    graph = _graph()
    allowed = {"clients", "loop", "tools", "llm", "session"} | GROUND
    wrong = {(m, d) for m, deps in graph.items() if _layer(m) == "clients"
             for d in deps if _layer(d) not in allowed}
    assert wrong == set()


def test_nothing_below_the_clients_reaches_up() -> None:
    graph = _graph()
    below = {"clients", "loop", "tools", "llm", "session"} | GROUND
    wrong = {(m, d) for m, deps in graph.items() if _layer(m) in below
             for d in deps if _layer(d) in ABOVE_CLIENTS}
    assert wrong == set()
    llm_up = {(m, d) for m, deps in graph.items() if _layer(m) == "llm"
              for d in deps if _layer(d) in {"clients", "loop", "tools"}}
    assert llm_up == set()


def test_no_import_circle_runs_through_the_model_layer_or_the_edge() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[set[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    watched = {"clients", "llm", "replay", "edge"} | GROUND
    assert [c for c in circles if any(_layer(m) in watched for m in c)] == []
