"""The Explorer driven as a user would, without a browser: set control values, press buttons,
then check the partition, history, tables, diagram and messages."""

from __future__ import annotations

import asyncio
import html
from pathlib import Path

import pandas as pd
import pytest

import hierviz as hv
from hierviz.widget import Explorer, explore
from hierviz.partitioner import partition as hv_partition
from tests.clock import ManualTimers, use_timers
from tests.widget.worker_waits import join_on_worker

RELU = "torch.ops.aten.relu.default"
CONFIG_FIELDS = ("priority", "support", "min_block_size", "torch_executed_ops", "require_full_compilation",
                 "skip_fusion")


def layout(p) -> list[tuple]:
    return [(sg.tag, sg.backend, sg.nodes) for sg in p.subgraphs]


@pytest.fixture
def ex(small, tmp_path: Path) -> Explorer:
    model, inputs, _ = small
    return explore(model, inputs, debounce=0, output_dir=tmp_path / "out")


def test_explore_is_a_widget_with_the_default_partition(ex: Explorer, small) -> None:
    import ipywidgets as widgets

    _, _, gm = small
    assert isinstance(ex, widgets.VBox)
    expected = hv_partition(gm)
    assert ex.partition.config == hv.Config()
    assert layout(ex.partition) == layout(expected)
    assert ex.partition.stats == expected.stats
    assert ex.error is None and ex.errors == {}
    assert len(ex.history) == 1
    # every panel shows something
    assert "<svg" in ex.panels["diagram"].value
    assert "special_i0e" in ex.panels["ops"].value
    for sg in expected.subgraphs:
        assert sg.tag in ex.panels["summary"].value
    assert "Dry-Run" in ex.panels["report"].value
    assert "subgraphs" in ex.panels["stats"].value and "boundary tensors" in ex.panels["stats"].value
    assert "1 runs" in ex.panels["history"].value


def test_controls_cover_every_config_field_and_show_the_config(ex: Explorer) -> None:
    assert set(CONFIG_FIELDS) | {"engine", "view", "measure"} <= set(ex.controls)
    assert ex.controls["engine"].value == "hierviz"
    c = ex.controls
    assert list(c["priority"].value) == ["tensorrt", "inductor"]
    assert c["min_block_size"].value == 5 and ex.min_block_size_box.value == 5
    # the slider's range fits the graph: 1 .. number of compute nodes
    assert c["min_block_size"].min == 1
    assert c["min_block_size"].max == sum(ex.controller.graph_ops.values())
    assert list(c["torch_executed_ops"].value) == []
    assert c["require_full_compilation"].value is False and c["skip_fusion"].value is False
    assert c["view"].value == "auto" and c["measure"].value is False
    assert ex.control_values() == {"priority": ("tensorrt", "inductor"), "support": None, "min_block_size": 5,
                                   "torch_executed_ops": frozenset(), "require_full_compilation": False,
                                   "skip_fusion": False, "demote_to": "torch", "engine": "hierviz"}
    assert c["demote_to"].value == "torch"


def test_explorer_starts_from_a_given_config(small) -> None:
    model, inputs, gm = small
    cfg = hv.Config(priority=("inductor", "tensorrt"), support={"inductor": hv.support.inductor()},
                    min_block_size=2, torch_executed_ops={RELU})
    ex = Explorer(model, inputs, cfg, debounce=0)
    assert ex.partition.config == cfg
    assert layout(ex.partition) == layout(hv_partition(gm, config=cfg))
    assert ex.controls["support"].value == {"tensorrt": "default", "inductor": "inductor"}
    assert list(ex.controls["torch_executed_ops"].value) == [RELU]


def test_min_block_size_slider_and_box(ex: Explorer, small) -> None:
    _, _, gm = small
    before_svg, before_summary = ex.panels["diagram"].value, ex.panels["summary"].value
    ex.controls["min_block_size"].value = 1
    assert ex.min_block_size_box.value == 1
    assert ex.partition.config.min_block_size == 1
    assert layout(ex.partition) == layout(hv_partition(gm, min_block_size=1))
    assert ex.partition.stats["subgraphs"] > 3
    assert ex.panels["diagram"].value != before_svg
    assert ex.panels["summary"].value != before_summary
    hist = ex.history
    assert list(hist["min_block_size"]) == [5, 1]
    assert list(hist["subgraphs"]) == [3, ex.partition.stats["subgraphs"]]
    # typing in the box moves the slider and re-runs
    ex.min_block_size_box.value = 2
    assert ex.controls["min_block_size"].value == 2
    assert ex.partition.config.min_block_size == 2
    assert len(ex.history) == 3


def test_priority_order_and_switching_backends_off(ex: Explorer, small) -> None:
    _, _, gm = small
    ex.controls["support"].value = {"inductor": "inductor"}
    assert ex.partition.config.support == {"inductor": hv.support.inductor()}
    ex.controls["priority"].value = ["inductor", "tensorrt"]
    p = ex.partition
    assert p.config.priority == ("inductor", "tensorrt")
    assert p.stats["subgraphs_by_backend"]["inductor"] == 1 and p.stats["subgraphs"] == 1
    # the dropdown follows the value, and the dropdown drives the value
    assert ex.controls["support"].dropdowns["inductor"].value == "inductor"
    ex.controls["support"].dropdowns["inductor"].value = "none"
    assert ex.partition.config.support == {"inductor": hv.support.none()}
    # switch tensorrt off: only inductor (which now takes nothing) is left
    ex.controls["support"].dropdowns["inductor"].value = "inductor"
    ex.controls["priority"].value = ["inductor"]
    assert ex.partition.config.priority == ("inductor",)
    assert layout(ex.partition) == layout(hv_partition(gm, priority=("inductor",),
                                                       support={"inductor": hv.support.inductor()}))
    assert list(ex.history["priority"]) == ["tensorrt>inductor", "tensorrt>inductor", "inductor>tensorrt",
                                            "inductor>tensorrt", "inductor>tensorrt", "inductor"]


def test_torch_executed_ops_picked_from_the_graph_with_counts(ex: Explorer, small) -> None:
    _, _, gm = small
    teo = ex.controls["torch_executed_ops"]
    # the picker beside the box offers exactly the graph's ops, most frequent first, and the source ops
    # the lowering replaced (for hv.source_ops: conv2d -> convolution, batch_norm -> its lowered op)
    ops = ex.controller.graph_ops
    offered = list(ex.op_pick.options)
    assert set(offered) == set(ops) | set(ex.source_ops)
    assert {"source:torch.ops.aten.conv2d.default", "source:torch.ops.aten.batch_norm.default"} <= set(ex.source_ops)
    counts = [ops[o] for o in offered[:len(ops)]]
    assert counts == sorted(counts, reverse=True)
    assert offered[len(ops):] == sorted(ex.source_ops, key=lambda o: (-ex.source_ops[o], o))
    ex.op_pick.value = "source:torch.ops.aten.conv2d.default"  # picked (Enter): a tag, the picker emptied
    assert list(teo.value) == ["source:torch.ops.aten.conv2d.default"] and ex.op_pick.value == ""
    assert "relu.default x2" in teo.tooltip
    teo.value = [RELU]
    assert ex.partition.config.torch_executed_ops == frozenset({RELU})
    assert layout(ex.partition) == layout(hv_partition(gm, torch_executed_ops={RELU}))
    assert "relu.default &times;2" in ex.teo_counts.value
    ops = ex.partition.ops().set_index("op")
    assert ops.loc[RELU, "torch"] == 2
    assert "in torch_executed_ops" in ex.panels["ops"].value
    # the short spelling is accepted and normalised
    teo.value = ["aten.tanh.default"]
    assert list(teo.value) == ["torch.ops.aten.tanh.default"]
    assert ex.partition.config.torch_executed_ops == frozenset({"torch.ops.aten.tanh.default"})
    assert ex.history["torch_executed_ops"].iloc[-1] == "torch.ops.aten.tanh.default"


def test_toggles(ex: Explorer, small) -> None:
    _, _, gm = small
    ex.controls["skip_fusion"].value = True
    assert ex.partition.config.skip_fusion is True
    assert layout(ex.partition) == layout(hv_partition(gm, skip_fusion=True))
    ex.controls["support"].value = {"inductor": "inductor"}
    ex.controls["require_full_compilation"].value = True  # inductor takes the two unsupported ops
    assert ex.error is None
    assert ex.partition.config.require_full_compilation is True
    assert ex.partition.stats["subgraphs_by_backend"]["torch"] == 0


@pytest.mark.parametrize("control,value,expected", [
    ("priority", [], "priority is empty"),
    ("require_full_compilation", True, "require_full_compilation=True, but 2 node(s) would run in PyTorch"),
    ("priority", ["tensorrt", "foo"], "unknown backend 'foo'"),
    ("priority", ["tensorrt", "tensorrt"], "lists a backend twice"),
])  # a support choice the picker has not, an unknown op name: refused by the control (test_widget_mistakes.py)
def test_invalid_settings_show_the_error_and_controls_stay_usable(ex: Explorer, small, control, value,
                                                                  expected) -> None:
    _, _, gm = small
    good = ex.partition
    ex.controls[control].value = value  # must not raise
    assert ex.partition is None and ex.config is None
    assert expected in ex.error
    with pytest.raises(hv.HiervizError) as info:
        hv_partition(gm, **ex.control_values())
    assert ex.error == str(info.value)
    assert html.escape(expected) in ex.panels["error"].value
    assert "last valid settings" in ex.panels["error"].value
    # the panels keep showing the last valid partition
    assert good.subgraphs[0].tag in ex.panels["summary"].value
    assert ex.history["error"].iloc[-1] == ex.error
    assert not ex.internal_errors
    # fix it: the error goes away and the partition is back
    ex.controls[control].value = {"priority": ["tensorrt", "inductor"], "require_full_compilation": False,
                                  "torch_executed_ops": [], "support": {}}[control]
    assert ex.error is None and ex.panels["error"].value == ""
    assert layout(ex.partition) == layout(good)
    ex.controls["min_block_size"].value = 1
    assert ex.partition.config.min_block_size == 1


def test_views_and_focus(ex: Explorer, small) -> None:
    full = ex.panels["diagram"].value
    ex.controls["view"].value = "collapsed"
    assert ex.panels["diagram"].value != full and "<svg" in ex.panels["diagram"].value
    ex.controls["view"].value = "focus"
    assert "Pick a node or subgraph" in ex.panels["diagram"].value
    assert ex.errors == {}
    # the picker offers subgraph tags and node names
    options = ex.controls["focus"].options
    assert ex.partition.subgraphs[0].tag in options and "hypot" in options
    ex.controls["focus"].value = "hypot"
    assert "<svg" in ex.panels["diagram"].value and "hypot" in ex.svg
    assert ex.svg != full
    # typing a focus target from another view switches to the focus view
    ex.controls["view"].value = "auto"
    ex.controls["focus"].value = ex.partition.subgraphs[0].tag
    assert ex.controls["view"].value == "focus"
    assert "<svg" in ex.panels["diagram"].value
    # an unknown node: a diagram message, the partition is still fine
    ex.controls["focus"].value = "no_such_node"
    assert "no_such_node" in ex.errors["diagram"]
    assert ex.partition is not None and ex.error is None
    assert "No diagram" in ex.panels["diagram"].value
    ex.controls["view"].value = "full"
    assert "diagram" not in ex.errors and "<svg" in ex.panels["diagram"].value
    # view changes do not add history rows: the partition did not change
    assert len(ex.history) == 1


def test_results_are_cached_per_config(small, monkeypatch: pytest.MonkeyPatch) -> None:
    from hierviz.compare import clear_cache

    clear_cache()
    model, inputs, _ = small
    ex = Explorer(model, inputs, debounce=0)
    first = ex.partition
    ex.controls["min_block_size"].value = 1
    one = ex.partition
    from hierviz.partitioner.partition_result import Partition

    calls = []
    original = Partition.report
    monkeypatch.setattr(Partition, "report", lambda self: calls.append(1) or original(self))
    ex.controls["min_block_size"].value = 5
    assert ex.partition is first  # the same object: nothing re-partitioned
    ex.controls["min_block_size"].value = 1
    assert ex.partition is one
    assert calls == []  # the tables and report were not rebuilt either
    hist = ex.history
    assert list(hist["cached"]) == [False, False, True, True]
    assert list(hist["run"]) == [1, 2, 3, 4]


def test_diff_against_previous_and_pinned(ex: Explorer) -> None:
    assert "no previous run yet" in ex.panels["diff"].value
    ex.buttons["pin"].click()
    pinned = ex.pinned
    assert pinned is ex.partition and ex.diff_against.value == "pinned"
    ex.controls["min_block_size"].value = 1
    moved = hv.diff(pinned, ex.partition)
    assert len(moved) > 0
    assert ex.moved.equals(moved)
    assert f"<b>{len(moved)}</b> node(s) moved from the pinned run" in ex.panels["diff"].value
    for node in moved["node"]:
        assert f">{node}<" in ex.panels["diff"].value
    ex.controls["min_block_size"].value = 2
    # still against the pinned run; then against the previous one
    assert ex.moved.equals(hv.diff(pinned, ex.partition))
    ex.diff_against.value = "previous"
    assert ex.previous.config.min_block_size == 1
    assert ex.moved.equals(hv.diff(ex.previous, ex.partition))
    assert "from the previous run" in ex.panels["diff"].value
    ex.buttons["unpin"].click()
    assert ex.pinned is None


def test_export_buttons_write_files_and_show_paths(ex: Explorer, tmp_path: Path) -> None:
    ex.controls["min_block_size"].value = 1
    for name in ("export_svg", "export_html", "export_csv"):
        ex.buttons[name].click()
    assert not ex.errors, ex.errors
    assert len(ex.exported) == 3
    csv_path, html_path, svg_path = ex.exported
    for path in ex.exported:
        assert path.exists() and path.parent == (tmp_path / "out").resolve()
        assert str(path) in html.unescape(ex.panels["export"].value)
    assert svg_path.suffix == ".svg" and svg_path.read_text().startswith("<svg")
    assert svg_path.read_text() == ex.svg
    assert html_path.suffix == ".html" and "<html" in html_path.read_text().lower()
    back = pd.read_csv(csv_path)
    assert list(back["min_block_size"]) == [5, 1]
    assert list(back.columns) == list(ex.history.columns)


def test_export_failure_is_shown_not_raised(ex: Explorer, tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    ex.output_dir.value = str(blocker / "sub")
    ex.buttons["export_csv"].click()  # must not raise
    assert "could not write" in ex.errors["export"]
    assert not ex.internal_errors
    ex.controls["priority"].value = []
    ex.output_dir.value = str(tmp_path / "ok")
    ex.buttons["export_svg"].click()
    assert "invalid" in ex.errors["export"]


def test_measure_toggle_with_progress(ex: Explorer, fake_measure) -> None:
    progress_values = []
    ex.progress.observe(lambda c: progress_values.append(c["new"]), names="value")
    assert "not asked" in ex.panels["stats"].value
    ex.controls["measure"].value = True
    ex.measure_thread.join(60)  # the measurement arrives after the change, never during it
    assert len(fake_measure.calls) == 1
    assert progress_values and progress_values[-1] == 1.0 and ex.progress.layout.display == "none"
    m = ex.measurement
    assert m.median_ms == 3.0
    assert "3 ms</b> median" in ex.panels["stats"].value
    row = ex.history.iloc[-1]
    assert row["median_ms"] == 3.0 and row["speedup"] == pytest.approx(2 / 3)
    assert len(ex.history) == 1  # the measurement filled in the current run's row
    # each new setting is measured; going back uses the stored measurement
    ex.controls["min_block_size"].value = 1
    ex.measure_thread.join(60)
    assert len(fake_measure.calls) == 2
    assert ex.history["median_ms"].iloc[-1] == ex.partition.stats["subgraphs"]
    ex.controls["min_block_size"].value = 5
    assert len(fake_measure.calls) == 2
    assert ex.history["median_ms"].iloc[-1] == 3.0
    # switched off: nothing measured
    ex.controls["measure"].value = False
    ex.controls["min_block_size"].value = 2
    assert len(fake_measure.calls) == 2
    assert pd.isna(ex.history["median_ms"].iloc[-1])


def test_real_measurement_in_the_widget(small) -> None:
    """hv.measure for real (CPU): inductor takes every op, so no GPU is needed."""
    from tests.small_net import UNSUPPORTED

    model, inputs, _ = small
    cfg = {"priority": ("inductor",), "support": {"inductor": hv.support.inductor()},
           "torch_executed_ops": UNSUPPORTED, "min_block_size": 1}
    ex = Explorer(model, inputs, cfg, debounce=0, measure_options={"iters": 3, "warmup": 1})
    seen = []
    ex.progress.observe(lambda c: seen.append(c["new"]), names="value")
    ex.controls["measure"].value = True
    join_on_worker(ex.measure_thread, "the measurement never ended")  # it arrives after the change, never during it
    assert "measure" not in ex.errors, ex.errors
    m = ex.measurement
    assert m is not None and m.median_ms > 0 and m.outputs_match
    assert seen and seen[-1] == 1.0 and ex.progress.layout.display == "none"
    assert "ms</b> median" in ex.panels["stats"].value
    row = ex.history.iloc[-1]
    assert row["median_ms"] == m.median_ms and row["cache_hits"] + row["cache_misses"] >= 1


def test_measure_error_is_shown(small, fake_measure) -> None:
    model, inputs, _ = small
    fake_measure.fail = "TensorRT needs an NVIDIA GPU"
    ex = Explorer(model, inputs, measure=True, debounce=0)
    ex.measure_thread.join(60)  # the measurement arrives after the change, never during it
    assert ex.errors["measure"] == "TensorRT needs an NVIDIA GPU"
    assert "NVIDIA GPU" in ex.panels["error"].value
    assert ex.partition is not None and ex.error is None
    fake_measure.fail = None
    ex.controls["min_block_size"].value = 1
    ex.measure_thread.join(60)
    assert "measure" not in ex.errors
    assert ex.measurement is not None


def test_unexpected_exceptions_never_reach_the_caller(ex: Explorer, monkeypatch: pytest.MonkeyPatch) -> None:
    from hierviz.partitioner.partition_result import Partition

    def broken(self, **_options):
        raise RuntimeError("boom")

    monkeypatch.setattr(Partition, "report", broken)
    ex.controls["min_block_size"].value = 1  # must not raise
    assert "RuntimeError: boom" in ex.errors["internal"]
    assert "Internal error" in ex.panels["error"].value
    assert isinstance(ex.internal_errors[-1], RuntimeError)
    monkeypatch.undo()
    ex.controls["min_block_size"].value = 2
    assert ex.partition.config.min_block_size == 2


def test_debounce_without_an_event_loop_uses_a_timer(small, monkeypatch) -> None:
    from hierviz.widget import debounce

    timers = ManualTimers()  # the debounce's timer fires when the test says, not after 50 ms of this machine
    use_timers(monkeypatch, debounce, timers)
    model, inputs, _ = small
    ex = Explorer(model, inputs, debounce=0.05)
    summary = ex.panels["summary"].value
    ex.controls["min_block_size"].value = 1
    ex.controls["min_block_size"].value = 2
    assert ex.scheduled == "timer" and ex.panels["summary"].value == summary  # not applied yet
    assert [t.interval for t in timers.made] == [0.05, 0.05] and len(timers.pending) == 1  # the first cancelled
    timers.fire()  # as the timer's thread does when 50 ms pass with no other change
    assert ex.panels["summary"].value != summary  # applied by the timer, without anyone asking
    assert len(ex.history) == 2  # the two quick changes made one run
    assert ex.partition.config.min_block_size == 2
    # reading the state applies a pending change at once
    ex.controls["min_block_size"].value = 3
    assert ex.partition.config.min_block_size == 3
    assert not timers.pending  # the read cancelled its timer


def test_a_change_waiting_for_its_debounce_is_dropped_when_the_explorer_closes(small, monkeypatch) -> None:
    from hierviz.widget import debounce

    timers = ManualTimers()
    use_timers(monkeypatch, debounce, timers)
    model, inputs, _ = small
    ex = Explorer(model, inputs, debounce=0.05)
    runs = len(ex.history)
    ex.controls["min_block_size"].value = 2
    assert len(timers.pending) == 1
    ex.close()
    assert not timers.pending and ex.scheduled is None  # no re-partition after close
    assert len(ex.controller.runs) == runs


def test_debounce_on_a_running_event_loop(small) -> None:
    model, inputs, _ = small

    async def scenario() -> Explorer:
        ex = Explorer(model, inputs, debounce=0.05)
        summary = ex.panels["summary"].value
        for v in (1, 2, 1):
            ex.controls["min_block_size"].value = v
        assert ex.scheduled == "loop"  # scheduled on the loop
        assert ex.panels["summary"].value == summary
        # the changes above ran with no await between them, so the loop could not fire the debounce
        # in between; its 50 ms handle is due before this sleep's, so it has run once sleep returns
        await asyncio.sleep(0.3)
        assert ex.panels["summary"].value != summary
        return ex

    ex = asyncio.run(scenario())
    assert len(ex.history) == 2 and ex.history["min_block_size"].iloc[-1] == 1
    assert not ex.internal_errors


def test_hv_explore_public_name(small) -> None:
    model, inputs, _ = small
    import hierviz.widget  # noqa: F401 - binds hv.widget to the package; it must still work

    ex = hv.explore(model, inputs, debounce=0)
    assert isinstance(ex, hv.Explorer)
    assert ex.partition.config == hv.Config()
