"""The runtime tests' helpers folder on the path (the ``workspace`` fixture, an empty folder as
the current directory, is in ``tests/conftest.py``; agents, MCP servers and failover marks are
process state that it resets)."""

from __future__ import annotations

import sys
from pathlib import Path

# Child processes (kernels, workers) import helpers from this folder by name.
_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

