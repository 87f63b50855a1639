"""Inline the widget's ES modules into one module for anywidget.

anywidget loads ``_esm`` from a blob URL, where relative imports cannot resolve. The front-end
sources stay separate files (the JupyterLab extension imports them as they are); this joins
them at load time. It handles the plain subset those files use: named ``import {…} from
"./x.js"``, ``export function/const/let/class NAME`` and one ``export default`` in the entry
(an imported module's ``export default NAME;`` line, kept for when it is an entry itself, is
dropped). Each module body runs in its own function scope, so private names never collide.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

__all__ = ["bundle_esm"]

_IMPORT = re.compile(r'^\s*import\s*\{([^}]*)\}\s*from\s*["\']\./([\w\-]+)\.js["\'];?\s*$',
                     re.MULTILINE)
_DEFAULT_NAME = re.compile(r"^export\s+default\s+\w+\s*;?\s*$", re.MULTILINE)
_EXPORT_DECL = re.compile(r"^export\s+(async\s+function|function\*?|const|let|class)\s+(\w+)",
                          re.MULTILINE)


def _ident(name: str) -> str:
    return "__ja_" + re.sub(r"\W", "_", name)


def _rewrite(source: str, deps: list[str]) -> tuple[str, list[str]]:
    def repl(m: re.Match[str]) -> str:
        dep = m.group(2)
        deps.append(dep)
        names = []
        for part in m.group(1).split(","):
            part = part.strip()
            if not part:
                continue
            if " as " in part:
                a, b = (x.strip() for x in part.split(" as "))
                names.append(f"{a}: {b}")
            else:
                names.append(part)
        return f"const {{ {', '.join(names)} }} = {_ident(dep)};"

    body = _IMPORT.sub(repl, source)
    exports = [m.group(2) for m in _EXPORT_DECL.finditer(body)]
    body = _EXPORT_DECL.sub(lambda m: f"{m.group(1)} {m.group(2)}", body)
    return body, exports


@functools.lru_cache(maxsize=4)
def bundle_esm(entry: Path) -> str:
    """One self-contained ES module: ``entry`` with its ``./x.js`` imports inlined."""
    folder = entry.parent
    order: list[str] = []
    bodies: dict[str, tuple[str, list[str]]] = {}

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in bodies:
            return
        if name in stack:
            raise ValueError(f"import cycle: {' -> '.join(stack + (name,))}")
        deps: list[str] = []
        body, exports = _rewrite((folder / f"{name}.js").read_text(encoding="utf-8"), deps)
        for dep in deps:
            visit(dep, stack + (name,))
        bodies[name] = (body, exports)
        order.append(name)

    visit(entry.stem, ())
    parts = []
    for name in order:
        body, exports = bodies[name]
        if name == entry.stem:
            parts.append(body)  # the entry keeps its `export default`
        else:
            body = _DEFAULT_NAME.sub("", body)
            parts.append(f"const {_ident(name)} = (() => {{\n{body}\nreturn {{ "
                         f"{', '.join(exports)} }};\n}})();")
    return "\n".join(parts)
