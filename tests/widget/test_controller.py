"""The Explorer's controller and panels without ipywidgets: control state (a dict) in,
Config, Partition, history and panel HTML out."""

from __future__ import annotations

import subprocess
import sys

import pytest

import hierviz as hv
from hierviz.widget import panels
from hierviz.compare.partition_cache import BoundedCache
from hierviz.widget.controller import ControlState, Controller
from hierviz.partitioner import partition as hv_partition

RELU = "torch.ops.aten.relu.default"


def layout(p) -> list[tuple]:
    return [(sg.tag, sg.backend, sg.nodes) for sg in p.subgraphs]


def state(**values) -> ControlState:
    return ControlState(values={**hv.Config().to_dict(), "support": None, **values})


def test_controller_and_panels_import_no_ipywidgets() -> None:
    code = ("import sys, hierviz.widget.controller, hierviz.widget.panels; "
            "print('ipywidgets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


def test_control_state_to_partition_and_history(small) -> None:
    _, _, gm = small
    c = Controller(gm, hv.Config())
    first = c.update(state())
    assert first.error is None and first.changed
    assert layout(first.partition) == layout(hv_partition(gm))
    # text forms go through the one parser, as everywhere else
    upd = c.update(state(min_block_size=1, priority="tensorrt>inductor", torch_executed_ops="relu.default"))
    assert upd.config == hv.Config(min_block_size=1, torch_executed_ops={RELU})
    assert layout(upd.partition) == layout(hv_partition(gm, min_block_size=1, torch_executed_ops={RELU}))
    assert c.previous is first.partition and c.shown is upd.partition
    # the same state again is not a new run
    assert not c.update(state(min_block_size=1, torch_executed_ops=[RELU])).changed
    hist = c.history()
    assert list(hist["run"]) == [1, 2]
    assert list(hist["min_block_size"]) == [5, 1] and str(hist["min_block_size"].dtype) in ("int64", "Int64")
    assert list(hist["torch_executed_ops"]) == ["", RELU]


def test_invalid_state_keeps_the_last_valid_partition(small) -> None:
    _, _, gm = small
    c = Controller(gm, hv.Config())
    good = c.update(state()).partition
    bad = c.update(state(min_block_size=2.7))
    assert bad.partition is None and c.partition is None
    assert "min_block_size" in bad.error and "2.7" in bad.error
    assert c.errors["partition"] == bad.error
    assert c.shown is good  # the panels keep showing it
    hist = c.history()
    assert hist["error"].iloc[-1] == bad.error
    assert "last valid settings" in panels.errors_html(c.errors, c.shown)
    with pytest.raises(hv.ConfigError, match="unknown Config field"):
        c.config_of({"min_blok_size": 3})


def test_panels_are_functions_of_a_partition(small) -> None:
    _, _, gm = small
    p = hv_partition(gm, min_block_size=1)
    tables = panels.tables_html(p)
    for sg in p.subgraphs:
        assert sg.tag in tables["summary"]
    assert "special_i0e" in tables["ops"] and "Dry-Run" in tables["report"]
    stats = panels.stats_html(p)
    assert f"<b>{p.stats['subgraphs']}</b>" in stats and "not asked: press" in stats
    assert panels.stats_html(None) == ""
    q = hv_partition(gm)
    moved = hv.diff(q, p)
    html = panels.diff_html(moved, p, q, "previous run")
    assert f"<b>{len(moved)}</b> node(s) moved from the previous run" in html
    kinds = moved["change"].value_counts()
    assert f"{kinds['backend']} change backend" in html  # counted by kind, backend changes listed first
    assert html.index("<td>backend</td>") < html.index(f"<td>{kinds.index[-1]}</td>") or len(kinds) == 1
    assert "no pinned run yet" in panels.diff_html(None, p, None, "pinned run")


def test_pin_diff_and_export_without_widgets(small, tmp_path) -> None:
    _, _, gm = small
    c = Controller(gm, hv.Config())
    c.update(state())
    pinned = c.pin()
    c.update(state(min_block_size=1))
    moved = c.moved("pinned")
    assert moved.equals(hv.diff(pinned, c.partition)) and len(moved) > 0
    assert c.moved("pinned") is moved  # cached
    with pytest.raises(hv.ConfigError, match="previous' or 'pinned"):
        c.moved("bogus")
    path = c.export("csv", tmp_path, "small net")
    assert path.name == "small_net-history.csv" and path.read_text().startswith("run,")
    with pytest.raises(hv.ConfigError, match="export kind"):
        c.export("gif", tmp_path, "x")
    c.update(state(priority=()))
    with pytest.raises(hv.ConfigError, match="invalid"):
        c.pin()
    with pytest.raises(hv.ConfigError, match="invalid"):
        c.export("svg", tmp_path, "x")
    assert "invalid" in c.errors["export"]


def test_caches_are_bounded(small) -> None:
    _, _, gm = small
    cache = BoundedCache(2)
    for i in range(5):
        cache.put(i, str(i))
    assert len(cache) == 2 and cache.get(4) == "4" and cache.get(0) is None
    c = Controller(gm, hv.Config(), cache_size=2)
    for size in (1, 2, 3, 4):
        part = c.update(state(min_block_size=size)).partition
        c.tables(part)
    assert c.cache_sizes()["tables"] == 2


def test_diff_panel_draws_the_difference_and_the_diagram_overlays_time(small) -> None:
    """Issue 14: the Diff tab shows the diff diagram (old -> new backends); a stored
    measurement is drawn on the diagram as the cost overlay."""
    import pandas as pd

    from hierviz.drawing.diff_overlay import CHANGED_LINE

    _, _, gm = small
    c = Controller(gm, hv.Config())
    c.update(state(min_block_size=1))
    c.pin()
    c.update(state(min_block_size=1, torch_executed_ops=[RELU]))
    panel = c.diff_panel("pinned")
    moved = c.moved("pinned")
    assert f"<b>{len(moved)}</b> node(s) moved" in panel
    assert "<svg" in panel and CHANGED_LINE.lower() in panel.lower() and "tensorrt \u2192 torch" in panel
    part = c.shown
    n = len(part.subgraphs)
    per = pd.DataFrame({"tag": [sg.tag for sg in part.subgraphs], "backend": [sg.backend for sg in part.subgraphs],
                        "median_ms": [1.5] * n, "share": [1 / n] * n})
    fake = type("FakeTimes", (), {"per_subgraph": per, "device": "cpu"})()
    assert "1.50 ms" not in c.svg(part, "collapsed", None)
    c.measurement_of = lambda p: fake if p is part else None  # as if hv.measure had run
    assert "1.50 ms" in c.svg(part, "collapsed", None)
    from hierviz.widget.options import views

    assert "modules" in views()  # the view control's buttons


def test_module_view_in_the_diagram_panel(small) -> None:
    """The view control's 'modules' option draws the module view (issue 14)."""
    _, _, gm = small
    c = Controller(gm, hv.Config())
    part = c.update(state(min_block_size=1)).partition
    panel = c.diagram(part, "modules", None)
    assert "module view" in panel and "<svg" in panel and "diagram" not in c.errors


def test_the_store_holds_the_partition_the_screen_shows(small, monkeypatch) -> None:
    """Issue 58 item 3: the partition shown is the store's for the setting on screen; going back
    to a setting takes it from there (the process-wide cache is the source beneath, not asked)."""
    from hierviz.widget import controller as controller_module

    _, _, gm = small
    c = Controller(gm, hv.Config())
    first = c.update(state()).partition
    second = c.update(state(min_block_size=1)).partition
    assert c.store.get("partition", second.config) is c.shown is second
    assert c.store.get("partition", first.config) is first
    asked: list = []
    monkeypatch.setattr(controller_module, "lookup", lambda graph, config: asked.append(config))
    back = c.update(state())
    assert back.partition is first and back.cached and asked == []
    assert c.shown is first and c.previous is second and c.store.still(first.config)
    assert bool(c.history()["cached"].iloc[-1])
