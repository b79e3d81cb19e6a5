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
