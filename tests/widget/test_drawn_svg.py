"""Controller.drawn_svg (what Explorer.svg gives, the SVG the Diagram panel shows) when several
threads draw: it is the latest drawing's, and an older drawing that finishes later (a build's
or a measurement's redraw that was slow) never replaces it."""

from __future__ import annotations

import threading

import hierviz as hv
from hierviz.widget.controller import ControlState, Controller

WAIT_S = 60.0  # a safety net only: the slow drawing waits on an event the test sets


def _controller_with_a_slow_first_drawing(gm):
    """A controller whose first svg() waits for `release` and gives "<svg>old</svg>"; later ones
    give "<svg>new</svg>" at once. (controller, started, release)"""
    c = Controller(gm, hv.Config())
    c.update(ControlState(values={**hv.Config().to_dict(), "support": None}))
    started, release = threading.Event(), threading.Event()
    calls = [0]

    def svg(part, view, focus):
        calls[0] += 1
        if calls[0] == 1:
            started.set()
            assert release.wait(WAIT_S)
            return "<svg>old</svg>"
        return "<svg>new</svg>"

    c.svg = svg
    return c, started, release


def _draw_in_a_thread(c, view: str = "auto", focus: str | None = None) -> threading.Thread:
    t = threading.Thread(target=c.diagram, args=(c.shown, view, focus))
    t.start()
    return t


def test_an_older_drawing_finishing_late_keeps_the_newer_svg(small) -> None:
    _, _, gm = small
    c, started, release = _controller_with_a_slow_first_drawing(gm)
    old = _draw_in_a_thread(c)
    assert started.wait(WAIT_S)
    assert "new" in c.diagram(c.shown, "auto", None)  # a newer drawing, done while the old one draws
    release.set()
    old.join(WAIT_S)
    assert not old.is_alive()
    assert c.drawn_svg == "<svg>new</svg>"


def test_a_newer_message_is_not_replaced_by_an_older_svg(small) -> None:
    """The newer drawing shows the focus hint (no SVG): the old SVG arriving later does not come back."""
    _, _, gm = small
    c, started, release = _controller_with_a_slow_first_drawing(gm)
    old = _draw_in_a_thread(c)
    assert started.wait(WAIT_S)
    c.diagram(c.shown, "focus", None)
    release.set()
    old.join(WAIT_S)
    assert c.drawn_svg is None


def test_drawings_in_turn_each_leave_their_svg(small) -> None:
    _, _, gm = small
    c, started, release = _controller_with_a_slow_first_drawing(gm)
    release.set()
    c.diagram(c.shown, "auto", None)
    assert c.drawn_svg == "<svg>old</svg>"
    c.diagram(c.shown, "auto", None)
    assert c.drawn_svg == "<svg>new</svg>"
    c.diagram(c.shown, "focus", "")
    assert c.drawn_svg is None


def test_a_builds_redraw_finishing_after_a_change_leaves_the_new_settings_diagram(small) -> None:
    """The Diagram panel, written by the update and by the build toggle's thread: a redraw of
    the built setting that finishes after the user moved on is dropped, so the panel shows the
    new setting's diagram (before, the old one replaced it)."""
    _, inputs, gm = small
    ex = hv.explore(gm, inputs, debounce=0)
    first = ex.partition.config.min_block_size
    started, release = threading.Event(), threading.Event()
    try:
        def svg(part, view, focus):
            if part.config.min_block_size == first:
                if threading.current_thread().name == "hierviz-build":
                    started.set()
                    assert release.wait(WAIT_S)
                return "<svg>first setting</svg>"
            return "<svg>second setting</svg>"

        ex.controller.svg = svg
        ex.controller.build = lambda part: "built"  # the engines "built": the build thread redraws
        ex.controls["build"].value = True
        assert started.wait(WAIT_S)
        ex.controls["min_block_size"].value = first + 1  # the user moves on while it draws
        assert "second setting" in ex.panels["diagram"].value
        release.set()
        ex.build_thread.join(WAIT_S)  # the first setting's redraw, then the second's build, on one thread
        assert not ex.build_thread.is_alive()
        panel = ex.panels["diagram"].value
        assert "second setting" in panel and "first setting" not in panel
        assert ex.panel_writer.dropped >= 1
    finally:
        release.set()
        ex.close()


def test_the_panel_writer_keeps_the_newest_view_of_the_shown_setting() -> None:
    import ipywidgets as widgets

    from hierviz.widget.panel_writer import PanelWriter
    from hierviz.widget.result_store import ResultStore

    w = PanelWriter({"stats": widgets.HTML()}, ResultStore(4).stamp)
    older, newer = w.stamp(), w.stamp()
    assert w.write("stats", "newer", newer)
    assert not w.write("stats", "older", older)  # made before, finished after: dropped
    assert not w.write("stats", "gone", w.stamp(), still=lambda: False)  # its setting is no longer shown
    assert w.panels["stats"].value == "newer" and (w.written, w.dropped) == (1, 2)
