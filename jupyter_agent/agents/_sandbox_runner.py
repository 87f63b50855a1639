"""The program the Python sandbox runs in its child process (as ``python -I -c <this source>``).

It is passed as source, never imported, so it depends on nothing but the standard library.
Arguments: the file descriptor to write the JSON result to, the memory limit in bytes (0: none),
the character cap of the result's repr and, optionally, the process limit (0: none). The code comes on stdin. Like a notebook cell, the
last statement's value, when it is an expression, is the result.
"""

from __future__ import annotations

import ast
import io
import json
import linecache
import os
import sys
import traceback

FILENAME = "<sandbox>"


def _limit_memory(max_bytes: int) -> None:
    # Set here rather than in the parent's preexec_fn, which is unsafe in a threaded kernel.
    # Soft and hard limit alike: the code cannot raise it again.
    if max_bytes <= 0:
        return
    try:
        import resource
    except ImportError:  # not a Unix system: no limit
        return
    resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))


def _limit_processes(count: int) -> None:
    # In the sandbox's user namespace this counts only the sandbox's processes (docs/sandbox.md).
    if count <= 0:
        return
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_NPROC, (count, count))
    except (ImportError, ValueError, OSError):  # a lower limit already: keep it
        return


def _error_text(exc: BaseException) -> str:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != FILENAME:
        tb = tb.tb_next  # drop this runner's own frames
    return "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()


def _cap(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[:cap] + f"... [{len(text) - cap:,} characters cut]"


def _run(code: str, cap: int) -> str | None:
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    tree = ast.parse(code, FILENAME, "exec")
    last: ast.Expression | None = None
    tail = tree.body[-1] if tree.body else None
    if isinstance(tail, ast.Expr):
        tree.body.pop()
        last = ast.Expression(tail.value)
    namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(compile(tree, FILENAME, "exec"), namespace)
    if last is None:
        return None
    value = eval(compile(last, FILENAME, "eval"), namespace)
    if value is None:
        return None
    return _cap(repr(value), cap)


def main() -> None:
    result_fd, max_bytes, cap = (int(a) for a in sys.argv[1:4])
    _limit_memory(max_bytes)
    _limit_processes(int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    code = sys.stdin.read()
    sys.stdin.close()
    sys.stdin = open(os.devnull)
    # Line by line: output printed before a timeout kill is not lost in a buffer.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)
    out: dict[str, str | int | bool | None] = {"result": None, "error": None, "memory_error": False, "exit_code": 0}
    try:
        out["result"] = _run(code, cap)
    except MemoryError:
        out["memory_error"] = True
        out["error"] = "MemoryError"
    except SystemExit as exc:
        code_ = exc.code
        if code_ not in (None, 0):
            out["exit_code"] = code_ if isinstance(code_, int) else 1
            out["error"] = f"SystemExit: {code_}"
    except BaseException as exc:  # the code's own errors, reported like a notebook cell
        try:
            out["error"] = _cap(_error_text(exc), cap)
        except MemoryError:
            out["memory_error"] = True
            out["error"] = "MemoryError"
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    with os.fdopen(result_fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(out))


if __name__ == "__main__":
    main()
