"""Types that say something: ``Any`` is rare in the package, and never hidden behind a name.

docs/architecture.md ("Types"): JSON is ``base.jsontypes.JSONObject``, an opaque value is
``object``, a tool is ``Tool[...]`` of its function; ``Any`` is left where a third party's API
gives nothing better. The count is of the word in the source (imports included), so a module
that needs none imports none. The checks parse the files; nothing is imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jupyter_agent"
BUDGET = 10
"""4 today (pydantic's ``create_model`` keyword fields, twice): a ratchet, not a target."""
WORD = re.compile(r"\bAny\b")


def any_count(package: Path) -> dict[str, int]:
    """Occurrences of the word ``Any`` in each module's source, by path."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        n = len(WORD.findall(path.read_text(encoding="utf-8")))
        if n:
            out[str(path.relative_to(package))] = n
    return out


def hidden_any(package: Path) -> list[str]:
    """``file:line`` where ``Any`` is renamed: ``import Any as X``, ``X = Any``,
    ``X: TypeAlias = Any`` or ``type X = Any``: a name that hides it from the count."""
    out = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            hidden = False
            if isinstance(node, ast.ImportFrom) and node.module in ("typing", "typing_extensions"):
                hidden = any(a.name == "Any" and a.asname not in (None, "Any") for a in node.names)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                value = node.value
                hidden = (isinstance(value, ast.Name) and value.id == "Any") or (
                    isinstance(value, ast.Attribute) and value.attr == "Any"
                )
            if hidden:
                out.append(f"{path.relative_to(package)}:{node.lineno}")
    return out


def test_any_stays_within_its_budget() -> None:
    counts = any_count(PACKAGE)
    total = sum(counts.values())
    worst = sorted(counts.items(), key=lambda kv: -kv[1])[:10]
    assert total <= BUDGET, f"Any appears {total} times (budget {BUDGET}); most in {worst}"


def test_any_is_never_renamed() -> None:
    assert hidden_any(PACKAGE) == []


def test_the_store_the_client_and_a_run_are_never_any() -> None:
    pattern = re.compile(r"\b(store|client|run)\s*:\s*Any\b|\bRun\[Any\]")
    hits = [
        f"{path.relative_to(PACKAGE)}:{i}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []


def test_the_checks_see_what_they_forbid(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from typing import Any as Anything\nfrom typing import Any\nJSON = Any\nx: dict[str, Any]\n"
    )
    assert any_count(tmp_path) == {"a.py": 4}
    assert hidden_any(tmp_path) == ["a.py:1", "a.py:3"]
