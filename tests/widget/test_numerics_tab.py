"""The Explorer's Numerics tab: the button runs hv.numerics on the shown settings, the panel
names where the error starts, the diagram is coloured by it; errors go to the error area."""

from __future__ import annotations

import hierviz as hv
from hierviz.drawing.accuracy import SCALE
from hierviz.widget import numerics_tab

from tests.compare.test_mismatch_at import BASE, MEASURE, _wrong_tag
from tests.widget.worker_waits import join_on_worker


def _explorer(model, inputs, **kwargs):
    return hv.explore(model, inputs, BASE, debounce=0, measure_options=MEASURE, **kwargs)


def test_numerics_tab_names_the_culprit_and_colours_the_diagram(small) -> None:
    model, inputs, gm = small
    ex = _explorer(model, inputs)
    titles = [ex.tabs.get_title(i) for i in range(len(ex.tabs.children))]
    assert "Numerics" in titles
    assert numerics_tab.HINT in ex.panels["numerics"].value  # nothing checked yet
    ex.buttons["check_numerics"].click()                       # as a user's click
    join_on_worker(ex.numerics_thread, "the check never ended", could_run_s=120.0)  # in the background, in the worker
    expected = _wrong_tag(gm, BASE)
    result = ex.controller.numerics_of(ex.partition)
    assert result is not None and result.culprit == expected
    panel = ex.panels["numerics"].value
    assert f"the error starts in {expected}" in panel and "outputs differ from eager PyTorch (max abs " in panel
    assert "font-weight:bold" in panel  # the culprit's row stands out
    svg = ex.svg
    assert "error starts here" in svg
    assert any(colour.lower() in svg.lower() for _, colour, _ in SCALE[3:])
    # other settings: the panel says nothing is checked for them; back again: the check is kept
    ex.controls["priority"].value = ["exact"]
    assert numerics_tab.HINT in ex.panels["numerics"].value
    ex.controls["priority"].value = ["exact", "wrong"]
    assert f"the error starts in {expected}" in ex.panels["numerics"].value


def test_numerics_failure_goes_to_the_error_area(small) -> None:
    model, inputs, _ = small
    ex = _explorer(model, inputs)
    ex.controller.measure_options = {**MEASURE, "compilers": {"exact": MEASURE["compilers"]["exact"]}}
    assert ex.check_numerics() is None
    assert "numerics" in ex.errors and "no compiler for backend 'wrong'" in ex.errors["numerics"]
    assert "Numerics" in ex.panels["error"].value
