"""Fixtures for the batch tests: a scripted model that classifies by content, so requests
arriving in any order (concurrent items) still get the answer meant for them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.openai_server import ScriptedOpenAI, match, rule, text

pytestmark = pytest.mark.timeout(120)


def classifier() -> Any:
    """billing for invoices, technical for crashes, other otherwise."""
    return match(rule(text("billing"), contains="invoice"),
                 rule(text("technical"), contains="crash"), otherwise=text("other"))


@pytest.fixture
def srv(server: ScriptedOpenAI) -> Iterator[ScriptedOpenAI]:
    """The scripted server answering every request with :func:`classifier`."""
    server.default = classifier()
    from jupyter_agent.llm.limiter import reset_limiters

    reset_limiters()
    yield server
    reset_limiters()


def user_texts(server: ScriptedOpenAI) -> list[str]:
    """The last user message of every request the server got, in arrival order."""
    out = []
    for body in server.requests:
        users = [m for m in body.get("messages", []) if m["role"] == "user"]
        out.append(users[-1]["content"] if users else "")
    return out


TICKETS = ["my invoice is wrong", "the app crash on start", "hello there",
           "second invoice problem", "a crash again", "what is this"]
EXPECTED = ["billing", "technical", "other", "billing", "technical", "other"]
