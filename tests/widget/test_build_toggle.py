"""The Explorer's "build engines" toggle: part.build() in the worker process, in the background
(the toggle returns at once), then the stats line and the diagram say which engines built."""

from __future__ import annotations

import pytest

from hierviz import trt
from hierviz.widget import Explorer
from hierviz.widget.worker import Worker
import hierviz as hv
from tests.building.failing_converters import RefusesToBuild, registered_in_new_processes
from tests.building.models import ConvNet, NormBetween, made
from tests.widget.worker_waits import join_on_worker

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")


def test_the_build_toggle_builds_in_the_worker_and_marks_the_engines(tmp_path, monkeypatch):
    registered_in_new_processes(monkeypatch, tmp_path / "site")  # the worker registers the test's converters
    own = Worker()  # started by this test's first job: the process's shared one may have started before
    monkeypatch.setattr(Worker, "shared", lambda: own)
    model, x = made(RefusesToBuild, 2, 8)  # the test's converter adds an assertion the builder refuses
    ex = Explorer(model, x, min_block_size=1, debounce=0)
    try:
        assert "built here" not in ex.panels["stats"].value  # off: nothing said, nothing built
        ex.controls["build"].value = True
        ex.flush()
        join_on_worker(ex.build_thread, "the build never ended", lambda: own.pid)
        builds = ex.controller.builds_of(ex.partition)
        assert builds is not None and not builds.ok
        here = ex.partition.build()  # the same answer in this process
        assert builds.df.drop(columns=["cached", "convert_s", "build_s"]).equals(
            here.df.drop(columns=["cached", "convert_s", "build_s"]))
        stats = ex.panels["stats"].value
        assert "built here" in stats and "0/1 engines built; _run_on_acc_tensorrt_0 failed at build" in stats
        assert "engine fails at build" in ex.panels["diagram"].value
        assert not ex.errors and not ex.internal_errors
        assert ex.controller.long_work.notes.get("build") is None  # it ran in the worker
        assert ex.controller.long_work.pid == own.pid is not None
    finally:
        ex.close()


def test_a_setting_that_builds_says_so():
    model, x = made(ConvNet, 1, 3, 16, 16)
    ex = Explorer(model, x, min_block_size=1, debounce=0)
    try:
        ex.controls["build"].value = True
        ex.flush()
        join_on_worker(ex.build_thread, "the build never ended")
        assert "1/1 engines built, " in ex.panels["stats"].value
        assert "engine built here" in ex.panels["diagram"].value
    finally:
        ex.close()


def test_the_graph_by_graph_explorer_builds_for_torch_compiles_path():
    model, x = made(NormBetween, 2, 16)
    gx = hv.explore(model, x, ir="torch_compile", min_block_size=1, torch_executed_ops={"_operator.getitem"},
                    debounce=0)
    try:
        ex = gx.explorer
        ex.controls["build"].value = True
        ex.flush()
        join_on_worker(ex.build_thread, "the build never ended")
        builds = ex.controller.builds_of(ex.partition)
        assert builds is not None and builds.ir == "torch_compile"
        assert builds.df.runs_instead[0].startswith("torch.compile runs the whole of graph g0 eagerly in PyTorch")
        here = gx.partition.build().of_graph("g0")
        times = ["cached", "convert_s", "build_s"]
        assert builds.df.drop(columns=times).equals(here.df.drop(columns=times))
    finally:
        gx.close()
