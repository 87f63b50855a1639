"""The batch card as text: markdown (GitHub, nbconvert, a saved notebook) and plain text.

The state it draws is the dict of ``batch/progress.py`` (counts, usage, speed, latest results;
at the end a preview of the results in item order and the comparison board). No HTML: answers,
errors and names are made inert (``_inert.py``: HTML escaped, links only to http(s) and mailto). Times and rates always carry a decimal point, so two executions
of a recorded notebook compare equal once numbers are masked.
"""

from __future__ import annotations

import json

from ..base.inert import inert_inline
from ..base.jsontypes import (
    JSONObject,
    ReadOnlyJSON,
    float_field,
    int_field,
    list_field,
    object_field,
    object_list,
)

__all__ = ["BATCH_MIME_TYPE", "judge_line", "batch_markdown", "batch_plain", "batch_bundle",
           "more_line", "summary_line", "plural", "COST_UNKNOWN"]

COST_UNKNOWN = "cost unknown: set a price in the profile"
"""What a cost that depends on a price the project does not know says (never 0)."""
WHERE_ALL = ("every row is in the batch's results DataFrame: `_agent_batch.results` after a "
             "`--over` cell, or the table named by `--out`")
"""Where a finished batch's rows that the card leaves out are (the card says so)."""

BATCH_MIME_TYPE = "application/vnd.jupyter-agent.batch+json"
_COUNTS = (("done", "done"), ("failed", "failed"), ("running", "running"),
           ("waiting", "waiting"), ("ask", "asking"), ("skipped", "not run"))
_BOARD = (("model", "model"), ("items", "items"), ("done", "done"), ("failed", "failed"),
          ("accuracy", "accuracy"), ("cost", "cost"), ("p50_seconds", "p50 s"),
          ("p95_seconds", "p95 s"), ("input_tokens", "tokens in"),
          ("output_tokens", "tokens out"))


def _cell(text: object) -> str:
    """Untrusted text in a table cell or a line: inert (docs/security.md), one line."""
    return inert_inline(str(text).replace("`", "'")).replace("|", "\\|")


def _fmt(key: str, value: object) -> str:
    if value is None:
        return "unknown" if key == "cost" else "–"  # an unpriced model's cost is not 0
    if not isinstance(value, (int, float)):  # a bool is a score too: shown as 1 or 0
        return str(value)
    if key == "accuracy":
        return f"{value:.1%}"
    if key == "cost":
        return f"{value:.4f}"
    if key.endswith("seconds"):
        return f"{value:.2f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 loss``, ``2 losses``, ``0 calls``: the count and the right form of ``word``."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def more_line(view: ReadOnlyJSON, shown: int) -> str | None:
    """``… 40 more not shown: <where>`` when the finished card's table holds fewer rows than the
    batch has (``None`` when it shows them all)."""
    total = view.get("results_total")
    if view.get("status") == "running" or not isinstance(total, int) or total <= shown:
        return None
    return f"… {total - shown:,} more not shown: {WHERE_ALL}"


def _title(view: ReadOnlyJSON) -> str:
    models = list_field(view, "models")
    over = f"{int_field(view, 'rows'):,} row{'s' if view.get('rows') != 1 else ''}"
    if len(models) > 1:
        over += f" × {len(models)} models"
    return (f"{view.get('kind', '')} over {over} · {view.get('engine', 'thread')} engine, "
            f"concurrency {view.get('concurrency', 0)}")


def _cost(view: ReadOnlyJSON) -> str:
    """``cost x``, or ``cost unknown`` when no price is known (``cost`` null: never a made-up
    0)."""
    cost = view.get("cost")
    if isinstance(cost, bool) or not isinstance(cost, (int, float)):
        return COST_UNKNOWN
    return f"cost {cost:.4f}"


def cache_line(view: ReadOnlyJSON) -> str:
    """``3 answers from the cache, none sent (saved 0.0120)``; the saving is unknown when a
    model has no price (``saved unknown: set a price in the profile``), never 0."""
    n = int_field(view, "cached")
    saved = view.get("saved")
    worth = (f"saved {saved:.4f}" if isinstance(saved, (int, float))
             and not isinstance(saved, bool) and view.get("cost") is not None
             else "saved unknown: set a price in the profile")
    return f"{plural(n, 'answer')} from the cache, not sent ({worth})"


def summary_line(view: ReadOnlyJSON) -> str:
    """Counts, tokens, cost and speed in one line."""
    c = object_field(view, "counts")
    counts = " · ".join(f"{label} {int_field(c, key):,}" for key, label in _COUNTS)
    if view.get("reused"):
        counts += f" ({int_field(view, 'reused'):,} from an earlier run)"
    if view.get("lost_rerun"):
        counts += f" · re-run after a worker was lost: {int_field(view, 'lost_rerun'):,}"
    if view.get("lost_held"):
        counts += f" · not re-run (side effects), check them: {int_field(view, 'lost_held'):,}"
    rate = float_field(view, "rate")
    speed = (f"{int_field(view, 'input_tokens'):,} in / {int_field(view, 'output_tokens'):,} "
             f"out tokens · {_cost(view)}"
             + (f" · {rate:.1f} items/min" if rate > 0 else "")
             + f" · {float_field(view, 'elapsed'):.1f} s")
    if view.get("cached"):
        speed += f" · {cache_line(view)}"
    if view.get("status") == "running" and view.get("eta") is not None:
        speed += f" · about {float_field(view, 'eta'):.1f} s left"
    return f"{counts}\n{speed}"


def _rows(view: ReadOnlyJSON) -> tuple[str, list[JSONObject]]:
    if view.get("status") == "running" or not view.get("preview"):
        return "Latest results", object_list(view, "latest")
    return "Results", object_list(view, "preview")


def _status(view: ReadOnlyJSON) -> str:
    state = str(view.get("status", "running"))
    return {"running": "running", "done": "finished", "stopped": "stopped",
            "error": "failed"}.get(state, state)


def judge_line(view: ReadOnlyJSON) -> str | None:
    """The judge's summary in one line (``None`` without a judge)."""
    j = object_field(view, "judge")
    if not j:
        return None
    mean = "–" if j.get("mean") is None else f"{float_field(j, 'mean'):.2f}/{j.get('scale', 5)}"
    line = (f"Judge ({j.get('model', '')}): mean {mean} over "
            f"{plural(int_field(j, 'judged'), 'answer')} · {int_field(j, 'invalid'):,} off-scale"
            f" · {judge_calls(j)} · {judge_cost(j)}")
    if j.get("failed"):
        line += f" · {int_field(j, 'failed'):,} failed"
    pw = object_field(j, "pairwise")
    if pw.get("compared"):
        line += (f" · {pw.get('a')} vs {pw.get('b')}: {plural(int_field(pw, 'wins_a'), 'win')}, "
                 f"{plural(int_field(pw, 'wins_b'), 'loss', 'losses')}, "
                 f"{plural(int_field(pw, 'ties'), 'tie')} "
                 f"(win rate {float_field(pw, 'win_rate_a'):.0%})")
    return line


def judge_calls(j: ReadOnlyJSON) -> str:
    """The judge's calls, those sent apart from those answered by the response cache (a fully
    cached judge sent nothing: ``5 calls from the cache``, never ``5 calls``)."""
    calls, cached = int_field(j, "calls"), int_field(j, "cached")
    sent = max(0, calls - cached)
    if not cached:
        return f"{plural(sent, 'call')} sent"
    if not sent:
        return f"{plural(cached, 'call')} from the cache, none sent"
    return f"{plural(sent, 'call')} sent, {cached:,} from the cache"


def judge_cost(j: ReadOnlyJSON) -> str:
    """``cost 0.0123``; :data:`COST_UNKNOWN` when the judge's model has no price."""
    cost = j.get("cost")
    if j.get("priced") is False or isinstance(cost, bool) or not isinstance(cost, (int, float)):
        return COST_UNKNOWN
    return f"cost {cost:.4f}"


def batch_markdown(view: ReadOnlyJSON) -> str:
    """The card as markdown."""
    out = [f"**Batch ({_status(view)})**: {_cell(_title(view))}",
           summary_line(view).replace("\n", "  \n")]
    if view.get("stop_reason"):
        out.append(f"> {_cell(view['stop_reason'])}")
    if judge_line(view):
        out.append(_cell(judge_line(view)))
    label, rows = _rows(view)
    if rows:
        scored = any(r.get("score") is not None for r in rows)
        judged = any("judge" in r for r in rows)  # a batch with a judge: each row's score
        head = ("| row | model | status | answer |" + (" score |" if scored else "")
                + (" judge |" if judged else ""))
        lines = [f"**{label}**", "", head, "|---" * (4 + scored + judged) + "|"]
        for r in rows:
            text = r.get("answer") or r.get("error") or ""
            line = (f"| {r.get('row')} | {_cell(r.get('model'))} | {r.get('status')} | "
                    f"{_cell(text)} |")
            if scored:
                line += f" {_fmt('score', r.get('score'))} |"
            if judged:
                line += f" {_fmt('score', r.get('judge'))} |"
            lines.append(line)
        more = more_line(view, len(rows))
        out.append("\n".join(lines) + (f"\n\n{_cell(more)}" if more else ""))
    board = object_list(view, "board")
    if board:
        keys = [(k, h) for k, h in _BOARD if k in board[0]]
        lines = ["**Comparison**", "", "| " + " | ".join(h for _, h in keys) + " |",
                 "|---" * len(keys) + "|"]
        for r in board:
            lines.append("| " + " | ".join(_cell(_fmt(k, r.get(k))) for k, _ in keys) + " |")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def batch_plain(view: ReadOnlyJSON) -> str:
    """The card as plain text (a terminal, a test)."""
    out = [f"Batch {_status(view)}: {_title(view)}", summary_line(view)]
    if view.get("stop_reason"):
        out.append(str(view["stop_reason"]))
    if judge_line(view):
        out.append(str(judge_line(view)))
    label, rows = _rows(view)
    if rows:
        lines = [f"{label}:"]
        for r in rows:
            text = " ".join(str(r.get("answer") or r.get("error") or "").split())
            score = "" if r.get("score") is None else f" (score {_fmt('score', r['score'])})"
            if r.get("judge") is not None:
                score += f" (judge {_fmt('score', r['judge'])})"
            lines.append(f"  {r.get('row')!s:>4} {r.get('model')} [{r.get('status')}] "
                         f"{text[:100]}{score}")
        more = more_line(view, len(rows))
        out.append("\n".join(lines + ([f"  {more}"] if more else [])))
    board = object_list(view, "board")
    if board:
        keys = [(k, h) for k, h in _BOARD if k in board[0]]
        lines = ["Comparison:", "  " + " | ".join(h for _, h in keys)]
        lines += ["  " + " | ".join(_fmt(k, r.get(k)) for k, _ in keys) for r in board]
        out.append("\n".join(lines))
    return "\n\n".join(out)


def batch_bundle(view: ReadOnlyJSON, widget_model_id: str | None = None) -> JSONObject:
    """The card's MIME bundle; with a widget, its view first so live front ends use it."""
    bundle: JSONObject = {}
    if widget_model_id:
        bundle["application/vnd.jupyter.widget-view+json"] = {
            "version_major": 2, "version_minor": 1, "model_id": widget_model_id}
    bundle[BATCH_MIME_TYPE] = json.loads(json.dumps(view, default=str))
    bundle["text/markdown"] = batch_markdown(view)
    bundle["text/plain"] = batch_plain(view)
    return bundle
