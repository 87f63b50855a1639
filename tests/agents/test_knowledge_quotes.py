"""Knowledge quotes reach users: ``quote_role``, ``quote_prompt`` and ``quote_template`` from
``chat()`` and from ``--quote-role`` / ``--quote-prompt VAR`` / ``--quote-template VAR``
(docs/behaviour.md §3.2, scenarios 41 and 14.33-34)."""

from __future__ import annotations

import pytest

from jupyter_agent import chat, toolloop
from jupyter_agent.agents.context import USER_QUOTE_PROMPT
from jupyter_agent.base.errors import ParameterError
from tests.fakes.openai_server import ScriptedOpenAI, text

pytestmark = pytest.mark.timeout(60)

DOCS = [{"q": "Refunds", "a": "within 30 days", "source": "policy.md"}]


def _body(server: ScriptedOpenAI, i: int = -1) -> list[dict]:
    return server.requests[i]["messages"]


def test_user_role_puts_the_knowledge_into_the_user_message(server: ScriptedOpenAI) -> None:
    server.default = text("ok")
    chat("Refund?", knowledge=DOCS, quote_role="user", session=None)
    msgs = _body(server)
    assert msgs[-1]["role"] == "user"
    assert msgs[-1]["content"] == USER_QUOTE_PROMPT.replace(
        "{{quote}}", "Refunds\nwithin 30 days").replace("{{question}}", "Refund?")
    assert all("within 30 days" not in m["content"] for m in msgs if m["role"] == "system")


def test_a_prompt_naming_the_question_and_an_item_template(server: ScriptedOpenAI) -> None:
    server.default = text("ok")
    chat("Refund?", knowledge=DOCS, session=None,
         quote_prompt="Q: {{question}}\nK:\n{{quote}}", quote_template="[{{source}}] {{a}}")
    assert _body(server)[-1]["content"] == "Q: Refund?\nK:\n[policy.md] within 30 days"
    # The system role: the prompt is a system part, the question stays as written.
    chat("Refund?", knowledge=DOCS, session=None, quote_prompt="Facts: {{quote}}")
    msgs = _body(server)
    assert msgs[-1]["content"] == "Refund?"
    assert "Facts: Refunds\nwithin 30 days" in msgs[0]["content"]


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"quote_role": "assistant", "knowledge": DOCS}, "quote_role"),
    ({"quote_prompt": "no placeholder", "knowledge": DOCS}, "quote_prompt"),
    ({"quote_template": "", "knowledge": DOCS}, "quote_template"),
    ({"quote_role": "user"}, "quote_role"),  # nothing to quote: it would do nothing
    ({"quote_template": "{{q}}"}, "quote_template"),
])
def test_quote_options_that_cannot_apply_are_refused(server: ScriptedOpenAI, kwargs: dict,
                                                     name: str) -> None:
    for entry in (chat, toolloop):
        with pytest.raises(ParameterError, match=name):
            entry("Refund?", session=None, **kwargs)
    assert server.requests == []


def test_the_flags_reach_the_request(server: ScriptedOpenAI) -> None:
    from IPython import get_ipython
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    shell = start_ipython() or get_ipython()
    shell.run_cell("%load_ext jupyter_agent")
    shell.user_ns.update(docs=DOCS, tpl="{{a}} ({{source}})", qp="Use {{quote}} for {{question}}")
    server.default = text("ok")
    with capture_output():
        r = shell.run_cell("%%chat -k docs --quote-role user --quote-template tpl --no-history\n"
                           "Refund?")
    assert r.success, r.error_in_exec
    assert "within 30 days (policy.md)" in _body(server)[-1]["content"]
    with capture_output():
        r = shell.run_cell("%%chat -k docs --quote-prompt qp --no-history\nRefund?")
    assert r.success and _body(server)[-1]["content"] == (
        "Use Refunds\nwithin 30 days for Refund?")
    sent = len(server.requests)
    for line in ("--quote-role user", "--quote-prompt nothere -k docs", "-k docs --quote-prompt docs"):
        with capture_output():
            r = shell.run_cell(f"%%chat {line} --no-history\nRefund?")
        assert isinstance(r.error_in_exec, UsageError), line
    assert len(server.requests) == sent
    for name in ("docs", "tpl", "qp"):
        shell.user_ns.pop(name, None)
