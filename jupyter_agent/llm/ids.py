"""Tool-call ids for calls a provider sent without one.

A module of its own, importing only the standard library: the loop's id bookkeeping
(``loop/call_ids.py``) needs it on every run, and must not load the streaming or prompt-tool
code (and their dependencies) to get it.
"""

from __future__ import annotations

import secrets

__all__ = ["new_call_id"]


def new_call_id() -> str:
    """A tool-call id for providers that send none (OpenAI style, so logs look alike)."""
    return "call_" + secrets.token_hex(12)
