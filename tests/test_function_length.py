"""No function of the package is longer than 60 lines unless its docstring says why.

A long function is usually several concepts in one; splitting it names them. Where a split
would not (a factory whose inner functions are the tools the model reads, a loop whose steps
read best in one place), the docstring carries a paragraph starting ``Long:`` with the reason.
Length counts every line from ``def`` to the end, the function's own docstring excepted.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 60


def _long_functions(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            first = node.body[0]
            doc = ast.get_docstring(node) or ""
            if doc and isinstance(first, ast.Expr):
                length -= (first.end_lineno or first.lineno) - first.lineno + 1
            if length > MAX_LINES and "\nLong: " not in "\n" + doc:
                out.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} "
                           f"({length} lines)")
    return out


def test_no_function_over_60_lines_without_a_reason() -> None:
    long = _long_functions(ROOT / "jupyter_agent")
    assert not long, "split these, or say why in a 'Long:' paragraph:\n" + "\n".join(long)


def test_the_check_finds_a_long_function_and_accepts_a_reason(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    (pkg / "a.py").write_text(f'def long():\n    """Does much."""\n{body}')
    (pkg / "b.py").write_text(f'def fine():\n    """Does much.\n\n    Long: one table.\n    """\n'
                              f"{body}")
    (pkg / "c.py").write_text(f"def short():\n{body[:-len('    x59 = 59')-1]}")
    assert [line.split(" ")[1] for line in _long_functions(pkg)] == ["long"]
