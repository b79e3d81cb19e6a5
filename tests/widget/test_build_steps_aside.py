"""A build in the explorer's worker never makes a measurement wait for its end: before each
conversion and build it starts (worker_main's `between_builds` callback) it steps aside while a
timing job waits, the timing job runs alone, and the build carries on; a cancelled build (its
explorer closed) stops there, unanswered, with nothing more converted.

The jobs run in this process through worker_main's own job thread (`_serve`), with Torch-TensorRT's
conversion stood in for at hierviz's boundary (trt.convert_and_build), so every step waits on an
event the test sets, never on the machine's speed."""

from __future__ import annotations

import io
import pickle
import threading
import types

import pytest
import torch

from hierviz.building import subgraph_builds
from hierviz.building.subgraph_builds import SubgraphBuilder
from hierviz.widget import worker_main

WAIT_S = 60.0  # a safety net only: every step waits on an event or a state the test makes happen


class _Add(torch.nn.Module):
    def forward(self, x):
        return x + 1


class _Mul(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Scene:
    """A fresh scheduler, a builder whose conversions are recorded, and a build job that builds
    two engines: between them it waits for `go` (after setting `between`)."""

    def __init__(self, monkeypatch) -> None:
        self.scheduler = worker_main.Scheduler()
        monkeypatch.setattr(worker_main, "_SCHEDULER", self.scheduler)
        monkeypatch.setattr(worker_main, "_CANCELLED", set())
        monkeypatch.setattr(worker_main, "run_job", self.run_job)
        monkeypatch.setattr(subgraph_builds, "no_builder", lambda: None)
        monkeypatch.setattr(subgraph_builds.trt, "conversion_settings", lambda *a, **k: "settings")
        monkeypatch.setattr(subgraph_builds.trt, "convert_and_build", self.convert)
        self.events: list[str] = []
        self.between, self.go = threading.Event(), threading.Event()
        self.out = io.BytesIO()
        self.answers = worker_main._Answers(self.out)
        self.engines = [torch.fx.symbolic_trace(_Add()), torch.fx.symbolic_trace(_Mul())]

    def convert(self, gm, settings, **options):
        self.events.append("converted " + ("x + 1" if gm is self.engines[0] else "x * 2"))
        return types.SimpleNamespace(warnings=(), engine=None, engine_file=None)  # what the builder reads of one

    def run_job(self, kind, payload, graph, inputs, progress):
        if kind == "build":
            builder = SubgraphBuilder(cache=False)
            builder.build(self.engines[0])
            self.between.set()
            assert self.go.wait(WAIT_S)
            builder.build(self.engines[1])
            self.events.append("build done")
            return "built"
        self.events.append(f"{kind} ran beside {self.scheduler.running - 1} other job(s)")
        return "measured"

    def serve(self, key: int, kind: str) -> threading.Thread:
        request = pickle.dumps(None)
        t = threading.Thread(target=worker_main._serve, args=(key, kind, (None, None), request, self.answers))
        t.start()
        return t

    def answered(self) -> list[tuple[int, str, object]]:
        self.out.seek(0)
        got = []
        while True:
            try:
                key, kind, payload = pickle.load(self.out)
            except EOFError:
                return got
            got.append((key, kind, pickle.loads(payload) if kind == "ok" else payload))


def _joined(*threads: threading.Thread) -> None:
    for t in threads:
        t.join(WAIT_S)
    assert not any(t.is_alive() for t in threads), "a job never ended"


def test_a_measurement_asked_during_a_build_runs_alone_before_the_build_goes_on(monkeypatch) -> None:
    scene = Scene(monkeypatch)
    build = scene.serve(1, "build")
    assert scene.between.wait(WAIT_S)  # one engine converted, the build still running
    measure = scene.serve(2, "measure")
    assert scene.scheduler.wait_for(lambda s: s.waiting == 1, WAIT_S)  # the measurement waits for the build
    assert scene.events == ["converted x + 1"]
    scene.go.set()  # the build reaches its next conversion: it steps aside there
    _joined(build, measure)
    assert scene.events == ["converted x + 1", "measure ran beside 0 other job(s)",
                            "converted x * 2", "build done"]
    assert sorted(scene.answered()) == [(1, "ok", "built"), (2, "ok", "measured")]


def test_a_build_with_no_measurement_waiting_does_not_stop(monkeypatch) -> None:
    scene = Scene(monkeypatch)
    scene.go.set()
    _joined(scene.serve(1, "build"))
    assert scene.events == ["converted x + 1", "converted x * 2", "build done"]
    assert scene.answered() == [(1, "ok", "built")]


def test_a_cancelled_build_stops_before_its_next_conversion_unanswered(monkeypatch) -> None:
    """What the explorer's close sends (a "cancel" of the job): the build stops at its next
    point, converts nothing more and answers nothing; a measurement after it runs."""
    scene = Scene(monkeypatch)
    build = scene.serve(1, "build")
    assert scene.between.wait(WAIT_S)
    worker_main._CANCELLED.add(1)  # main() does this for a "cancel" message
    scene.go.set()
    _joined(build)
    assert scene.events == ["converted x + 1"]
    assert scene.answered() == [] and worker_main._CANCELLED == set()
    _joined(scene.serve(2, "measure"))
    assert scene.answered() == [(2, "ok", "measured")]


def test_a_build_cancelled_while_it_stepped_aside_stops_when_the_measurement_ends(monkeypatch) -> None:
    scene = Scene(monkeypatch)
    scene.scheduler_in_measure = threading.Event()
    release = threading.Event()
    original = scene.run_job

    def run_job(kind, payload, graph, inputs, progress):
        if kind == "measure":  # the build has stepped aside: cancel it while the measurement runs
            worker_main._CANCELLED.add(1)
            scene.scheduler_in_measure.set()
            assert release.wait(WAIT_S)
        return original(kind, payload, graph, inputs, progress)

    monkeypatch.setattr(worker_main, "run_job", run_job)
    build = scene.serve(1, "build")
    assert scene.between.wait(WAIT_S)
    measure = scene.serve(2, "measure")
    assert scene.scheduler.wait_for(lambda s: s.waiting == 1, WAIT_S)
    scene.go.set()
    assert scene.scheduler_in_measure.wait(WAIT_S)
    assert scene.scheduler.running == 1  # the measurement alone: the build is out of its slot
    release.set()
    _joined(build, measure)
    assert scene.events == ["converted x + 1", "measure ran beside 0 other job(s)"]
    assert scene.answered() == [(2, "ok", "measured")]


@pytest.mark.parametrize("kind", ["compile_today", "numerics"])
def test_other_jobs_still_run_beside_a_build(monkeypatch, kind: str) -> None:
    scene = Scene(monkeypatch)
    build = scene.serve(1, "build")
    assert scene.between.wait(WAIT_S)
    _joined(scene.serve(2, kind))  # not a timing job: it runs while the build waits between engines
    scene.go.set()
    _joined(build)
    assert scene.events[1] == f"{kind} ran beside 1 other job(s)"


def test_a_build_answer_with_a_fix_crosses_without_its_fixed_partition(monkeypatch) -> None:
    """A fix search's fixed partition holds a graph that does not pickle: the worker's answer
    is the Builds without it (the fix itself crosses), so the explorer shows the build."""
    from hierviz.building import build_partition
    from hierviz.building.builds import Builds

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("a pybind function is not pickleable")

    made = Builds(rows=(), builder="TensorRT-RTX 1.6", on_cpu=True, fix=frozenset({"aten.add.Tensor"}),
                  fixed_partition=Unpicklable())
    monkeypatch.setattr(build_partition, "build_one", lambda part, graph, inputs: made)
    monkeypatch.setattr(worker_main, "cached_partition", lambda graph, config: None)
    monkeypatch.setattr(worker_main, "_import_for", lambda kind: None)
    got = pickle.loads(pickle.dumps(worker_main.run_job("build", (None, None), None, None, lambda *a: None)))
    assert got.fix == frozenset({"aten.add.Tensor"}) and got.fixed_partition is None
