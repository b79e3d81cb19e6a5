"""Issue 58 item 3: a setting change shows its picture before the panels of other tabs: the
Ops, Subgraphs and Report tables of a new setting and the History table (a pandas frame and
its HTML, rebuilt at every change) are written after the diagram, not before it."""

from __future__ import annotations

from hierviz.widget import Explorer


def test_a_change_draws_the_diagram_before_the_other_tabs_tables(small) -> None:
    model, inputs, _ = small
    ex = Explorer(model, inputs, debounce=0)
    written: list[str] = []
    for name in ("diagram", "history", "stats", "ops", "summary", "report"):
        ex.panels[name].observe(lambda _c, name=name: written.append(name), names="value")
    ex.controls["min_block_size"].value = 1
    assert written.index("stats") < written.index("diagram") < written.index("history"), written
    assert all(written.index("diagram") < written.index(tab) for tab in ("ops", "summary", "report")), written
    assert "<table" in ex.panels["history"].value and len(ex.history) == 2
