"""The live widget's patch protocol in a real headless Chromium.

The kernel side is the real ``RunWidget`` over a recording comm (``tests/fakes/comms.py``):
the patches applied here are the messages it sent while a run's events were reduced. The page
applies them with the shipped ``patch.js`` (and the anywidget module as the widget ships it)
and must end where the kernel's view is: the same JSON, the same drawing as a fresh render of
the final view. A missing patch makes the page ask for a snapshot once and wait for it; old,
repeated or malformed patches change nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_agent.ui.shared import BUNDLE
from jupyter_agent.ui.widget import RunWidget
from jupyter_agent.view.reduce import new_view, reduce_event
from tests.fakes.comms import recording_comms
from tests.fakes.run_stream import run_stream

from .render_harness import chromium_path, launch_browser, serve, write_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(chromium_path() is None, reason="no system Chromium"),
]


def recorded_stream() -> tuple[dict[str, Any], list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """The snapshot the widget opened with, the patches it sent, and the view after each."""
    view = new_view()
    with recording_comms() as comms:
        widget = RunWidget(view)
    (wire,) = [c for c in comms if "view" in c.messages[0][1]["state"]]
    snapshot = wire.messages[0][1]["state"]["view"]
    patches: list[dict[str, Any]] = []
    views: dict[int, dict[str, Any]] = {0: copy.deepcopy(view)}
    for event in run_stream(rounds=10, output_chars=600):
        reduce_event(view, event)
        start = len(wire.messages)
        widget.push()
        for _, data in wire.messages[start:]:
            if "content" not in data:
                # A recovery snapshot the young widget sends unasked (ui/widget.py's
                # RECOVERY_AGES): a state update, due when this loop runs slowly (a loaded
                # machine). The patches stand without it.
                continue
            patches.append(data["content"])
            views[data["content"]["seq"]] = copy.deepcopy(view)
    return snapshot, patches, views


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    root = tmp_path_factory.mktemp("patch")
    write_page(root / "p", new_view(), live=False)
    with serve(root) as url, sync_playwright() as p:
        browser = launch_browser(p)
        pg = browser.new_page(viewport={"width": 960, "height": 900})
        pg.goto(f"{url}p/index.html")
        pg.wait_for_function("window.ready === true")
        yield pg
        browser.close()


# A fake anywidget model: attributes, event handlers, the messages the page sent.
_MODEL = """
function fakeModel(attrs) {
  const handlers = {};
  const model = {
    sent: [],
    get(k) { return attrs[k]; },
    on(ev, fn) { (handlers[ev] ||= []).push(fn); },
    off(ev, fn) { handlers[ev] = (handlers[ev] || []).filter((f) => f !== fn); },
    send(msg) { this.sent.push(msg); },
    deliver(msg) { for (const fn of handlers["msg:custom"] || []) fn(msg, []); },
    snapshot(view, seq) {
      attrs.view = view; attrs.view_seq = seq;
      for (const fn of handlers["change:view"] || []) fn();
      for (const fn of handlers["change:view_seq"] || []) fn();
    },
  };
  return model;
}
"""


def test_the_patch_stream_draws_what_the_full_view_draws(page: Any) -> None:
    snapshot, patches, views = recorded_stream()
    final = views[max(views)]
    assert len(patches) > 50 and final["status"] == "done"
    result = page.evaluate(
        "async ({snapshot, patches, final, widgetSrc}) => {" + _MODEL + """
            const frame = () => new Promise((r) => requestAnimationFrame(r));
            const url = URL.createObjectURL(new Blob([widgetSrc], {type: "text/javascript"}));
            const widget = (await import(url)).default.run;
            const { viewState } = await import(new URL("patch.js", location.href).href);
            const { renderRunInto } = await import(new URL("render.js", location.href).href);
            // The widget as anywidget runs it: initialize, then render; draws between patches.
            const model = fakeModel({view: structuredClone(snapshot), view_seq: 0});
            widget.initialize({model});
            const el = document.createElement("div");
            document.body.appendChild(el);
            const cleanup = widget.render({model, el});
            // The bare state, on a second model fed the same messages.
            const bare = fakeModel({view: structuredClone(snapshot), view_seq: 0});
            const state = viewState(bare);
            for (const [i, p] of patches.entries()) {
              model.deliver(structuredClone(p));
              bare.deliver(structuredClone(p));
              if (i % 3 === 0) await frame();  // some patches land in one frame, some not
            }
            await frame(); await frame();
            const ref = document.createElement("div");
            document.body.appendChild(ref);
            renderRunInto(ref, final, { onAction() {} });
            const out = {html: el.innerHTML, ref: ref.innerHTML, view: state.view,
                         seq: state.seq, sent: model.sent.concat(bare.sent)};
            cleanup();
            return out;
        }""",
        {"snapshot": snapshot, "patches": patches, "final": final,
         "widgetSrc": BUNDLE.read_text(encoding="utf-8")},
    )
    assert result["sent"] == []  # nothing was missed: no resync asked
    assert result["seq"] == patches[-1]["seq"]
    assert result["view"] == final
    assert result["html"] == result["ref"] and "All parts read." in result["html"]


def test_a_missing_patch_asks_once_for_a_snapshot_and_old_or_bad_patches_change_nothing(
        page: Any) -> None:
    snapshot, patches, views = recorded_stream()
    p = {m["seq"]: m for m in patches}
    result = page.evaluate(
        "async ({snapshot, p, views}) => {" + _MODEL + """
            const { viewState } = await import(new URL("patch.js", location.href).href);
            const model = fakeModel({view: structuredClone(snapshot), view_seq: 0});
            const state = viewState(model);
            const out = {};
            model.deliver(p[1]); model.deliver(p[2]);
            model.deliver(p[4]);  // 3 never came
            model.deliver(p[5]);  // still waiting: not applied, not asked again
            out.gap = {sent: structuredClone(model.sent), seq: state.seq, waiting: state.waiting,
                       view: structuredClone(state.view)};
            model.snapshot(structuredClone(views[5]), 5);  // the kernel's answer
            out.after = {seq: state.seq, waiting: state.waiting};
            for (const old of [p[4], p[5], p[2]]) model.deliver(old);  // late or repeated
            model.deliver(p[6]);
            model.deliver(p[6]);  // twice: its appends must not double
            for (const bad of [null, "x", {type: "patch"}, {type: "patch", seq: "7", ops: []},
                               {type: "other", seq: 7}, {type: "patch", seq: 7,
                                ops: [null, {op: "nope"}, {op: "update", index: 9999}]}]) {
              model.deliver(bad);
            }
            out.end = {sent: model.sent.length, seq: state.seq, view: state.view};
            return out;
        }""",
        {"snapshot": snapshot, "p": p, "views": {str(k): v for k, v in views.items()}},
    )
    assert result["gap"]["sent"] == [{"type": "sync", "seq": 2}]
    assert result["gap"]["seq"] == 2 and result["gap"]["waiting"] is True
    assert result["gap"]["view"] == views[2]  # patches after the gap were not applied
    assert result["after"] == {"seq": 5, "waiting": False}
    # The well-formed seq 7 with junk ops applied what it could (nothing) and moved on.
    assert result["end"]["sent"] == 1 and result["end"]["seq"] == 7
    assert result["end"]["view"] == views[6]



def test_two_copies_of_the_module_on_one_model_apply_each_patch_once(page: Any) -> None:
    """anywidget may import the widget module again for a new view: each copy then sees the
    same model, and the same message object reaches every listener. Every patch must still be
    applied once (a streamed answer drawn twice over was the symptom in JupyterLab)."""
    snapshot, patches, views = recorded_stream()
    final = views[max(views)]
    result = page.evaluate(
        "async ({snapshot, patches, widgetSrc}) => {" + _MODEL + """
            const load = async () => (await import(URL.createObjectURL(
                new Blob([widgetSrc], {type: "text/javascript"})))).default.run;
            const first = await load(), second = await load();
            const model = fakeModel({view: structuredClone(snapshot), view_seq: 0});
            first.initialize({model});
            const el = document.createElement("div");
            document.body.appendChild(el);
            const cleanup = second.render({model, el});
            for (const p of patches) model.deliver(p);  // one object for every listener
            await new Promise((r) => requestAnimationFrame(r));
            const { viewState } = await import(new URL("patch.js", location.href).href);
            const out = {view: viewState(model).view, sent: model.sent};
            cleanup();
            return out;
        }""",
        {"snapshot": snapshot, "patches": patches,
         "widgetSrc": BUNDLE.read_text(encoding="utf-8")},
    )
    assert result["sent"] == []
    assert result["view"] == final
