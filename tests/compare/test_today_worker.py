"""The explorer stays interactive while "torch_tensorrt.compile today" is computed: upstream's
partitioner runs in a child process (hierviz/compare/today_worker.py), its answer is the same
as computing it here, it is cached per setting, and a failing worker never reaches the kernel
(the line is then computed here)."""

from __future__ import annotations

import sys

import pytest

import hierviz as hv
from hierviz import trt
from hierviz.compare import engines, today_worker
from hierviz.compare.engines import CompileToday, compile_partition
from hierviz.compare.today_counts import counts_of
from hierviz.compare.today_worker import TodayWorker, WorkerError
from hierviz.widget import Explorer, controls as ctl

needs_trt = pytest.mark.skipif(not trt.available(), reason="the line runs torch_tensorrt's fast partitioner")
BROKEN = (sys.executable, "-c", "import sys; sys.stderr.write('no worker here\\n'); sys.exit(3)")


def here(gm, config):
    fast, why = compile_partition(gm, config)
    return (None if fast is None else counts_of(fast)), why


@needs_trt
def test_worker_answers_as_computing_here(small) -> None:
    _, _, gm = small
    worker = TodayWorker.shared()
    for settings in ({"min_block_size": 1}, {"min_block_size": 3, "torch_executed_ops": ("torch.ops.aten.relu.default",)},
                     {"min_block_size": 1, "require_full_compilation": True}):
        cfg = hv.Config(**settings)
        assert worker.run(gm, cfg) == here(gm, cfg), settings


@needs_trt
def test_line_is_cached_per_setting_and_same_as_here(small) -> None:
    _, _, gm = small
    today = CompileToday(gm, 4)
    part = hv.partition(gm, min_block_size=2)
    first = today.compute(part)
    assert today.get(part) is first and today.compute(part) is first  # made once
    assert first == here(gm, part.config) and today.worker_error is None
    assert today.get(hv.partition(gm, min_block_size=1)) is None  # another setting: not made yet
    other = hv.partition(gm, min_block_size=1)
    assert today.compute(other, lambda: False) is None  # no longer shown when the worker is free: skipped
    assert today.get(other) is None and today.compute(other) == here(gm, other.config)


@needs_trt
def test_a_worker_that_fails_falls_back_here(small) -> None:
    _, _, gm = small
    broken = TodayWorker(BROKEN)
    with pytest.raises(WorkerError, match="no worker here"):
        broken.run(gm, hv.Config(min_block_size=1))
    today = CompileToday(gm, 4, worker=broken)
    part = hv.partition(gm, min_block_size=1)
    assert today.compute(part) == here(gm, part.config)
    assert "no worker here" in today.worker_error and today.worker is None


@needs_trt
def test_explorer_update_is_hv_partition_and_the_line_shows(small, monkeypatch) -> None:
    model, inputs, gm = small
    monkeypatch.setattr(today_worker, "COMMAND", BROKEN)  # a fresh worker that cannot start
    monkeypatch.setattr(today_worker, "_shared", [])
    ex = Explorer(model, inputs, debounce=0, min_block_size=1)
    for size in (2, 3, 1):
        ex.controls["min_block_size"].value = size
        ex.compile_today_thread.join(60)
        mine, plain = ex.partition, hv.partition(gm, min_block_size=size)
        assert [sg.tag for sg in mine.subgraphs] == [sg.tag for sg in plain.subgraphs]
        assert [sg.nodes for sg in mine.subgraphs] == [sg.nodes for sg in plain.subgraphs]
        fast = hv.partition(gm, engine="fast", min_block_size=size).stats["subgraphs_by_backend"]["tensorrt"]
        assert f"torch_tensorrt.compile today (fast):</span> <b>{fast}</b> TensorRT engine(s)" in ex.panels["stats"].value
    assert ex.internal_errors == []
    assert "no worker here" in ex.controller.compile_today.worker_error


@needs_trt
def test_a_failing_line_never_reaches_the_kernel(small, monkeypatch) -> None:
    model, inputs, _ = small

    def fails(self, config, wanted):
        raise RuntimeError("upstream broke")

    monkeypatch.setattr(engines.CompileToday, "_make", fails)
    ex = Explorer(model, inputs, debounce=0, min_block_size=1)
    ex.compile_today_thread.join(60)
    ex.controls["min_block_size"].value = 2  # the widget goes on
    ex.compile_today_thread.join(60)
    assert ex.partition.config.min_block_size == 2
    assert [str(e) for e in ex.internal_errors] == ["upstream broke", "upstream broke"]
    assert "computing ..." in ex.panels["stats"].value


def test_diff_diagram_is_drawn_when_its_tab_opens(small) -> None:
    model, inputs, _ = small
    ex = Explorer(model, inputs, debounce=0, min_block_size=1)
    ex.controls["min_block_size"].value = 3
    assert "node(s) moved from the previous run" in ex.panels["diff"].value
    assert "<svg" not in ex.panels["diff"].value  # the Diff tab is closed: no second layout per change
    ex.tabs.selected_index = ctl.tab_index("diff_box")
    assert "<svg" in ex.panels["diff"].value
