"""Fixtures for the widget and compare tests (a pytest plugin of tests/conftest.py): a small
model with ops TensorRT cannot take, its capture (once per session), a fake `hv.measure` for
tests of the latency path (real compiles take seconds on CPU; one test in
tests/compare/test_sweep.py runs the real thing), and backends whose timings a test decides."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pytest
import torch
from torch import nn

from tests.latency._measure_helpers import FakeClock


class SmallNet(nn.Module):
    """conv-bn-relu, then two ops with no TensorRT converter (special_i0e, hypot) between
    supported ones, so settings change the partition in visible ways."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x)))
        y = y + torch.special.i0e(y)
        y = torch.sigmoid(self.conv2(y)) * y
        y = torch.hypot(y, y + 1)
        y = torch.relu(y)
        y = y.mean((2, 3))
        return torch.tanh(self.fc(y))


UNSUPPORTED = ("torch.ops.aten.special_i0e.default", "torch.ops.aten.hypot.default")


@pytest.fixture(scope="session")
def small() -> tuple[nn.Module, tuple, torch.fx.GraphModule]:
    """(model, example_inputs, captured graph)."""
    import hierviz as hv

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = SmallNet().eval()
        inputs = (torch.randn(1, 3, 16, 16),)
    return model, inputs, hv.capture(model, inputs)


@dataclass
class FakeMeasurement:
    median_ms: float
    p10_ms: float
    p90_ms: float
    std_ms: float
    cv: float
    baseline_ms: float
    speedup: float
    max_abs_error: float
    outputs_match: bool
    compile_s: float
    cache_hits: int
    cache_misses: int
    per_subgraph: pd.DataFrame = field(default_factory=pd.DataFrame)
    warnings: list = field(default_factory=list)
    fallbacks: tuple = ()


class FakeMeasure:
    """Stands in for hv.measure: latency = 1 ms per subgraph; reports progress like the real
    one (stage, done, total); records its calls; raises MeasureError when told to."""

    def __init__(self) -> None:
        self.calls: list[Any] = []
        self.fail: str | None = None
        self.seen: set = set()

    def __call__(self, partition: Any, example_inputs: Any, *, progress: Any = None, **kwargs: Any) -> FakeMeasurement:
        from hierviz.errors import MeasureError

        self.calls.append((partition.config, kwargs))
        total = len(partition.subgraphs) + 2
        for done in range(1, total + 1):
            if callable(progress):
                progress(f"step {done}", done, total)
        if self.fail:
            raise MeasureError(self.fail)
        n = len(partition.subgraphs)
        hit = partition.config in self.seen
        self.seen.add(partition.config)
        per_subgraph = pd.DataFrame({"tag": [sg.tag for sg in partition.subgraphs],
                                     "backend": [sg.backend for sg in partition.subgraphs],
                                     "median_ms": [1.0] * n, "share": [1.0 / n] * n})
        return FakeMeasurement(median_ms=float(n), p10_ms=n * 0.9, p90_ms=n * 1.1, std_ms=0.01, cv=0.01 / n,
                               baseline_ms=2.0, speedup=2.0 / n, max_abs_error=1e-6, outputs_match=True,
                               compile_s=0.0 if hit else 0.5, cache_hits=n if hit else 0,
                               cache_misses=0 if hit else n, per_subgraph=per_subgraph)

    def with_options(self, partition: Any, example_inputs: Any, options: Any) -> FakeMeasurement:
        """Stands in for hierviz.latency.measure_with (what hv.sweep's rows call with their one
        MeasureOptions); records that record itself."""
        measured = self(partition, example_inputs, progress=options.progress)
        self.calls[-1] = (partition.config, options)
        return measured


@pytest.fixture
def fake_measure(monkeypatch: pytest.MonkeyPatch) -> FakeMeasure:
    import hierviz.latency as package

    from hierviz.widget import long_work

    fake = FakeMeasure()
    monkeypatch.setattr(package, "measure", fake)
    monkeypatch.setattr(package, "measure_with", fake.with_options)
    monkeypatch.setattr(long_work, "IN_WORKER", False)  # the fake stands in here, not in a worker process
    return fake


@pytest.fixture
def gated(fake_measure: FakeMeasure) -> tuple[FakeMeasure, threading.Event]:
    """fake_measure held until the test sets the returned gate: a measurement that is still running."""
    gate = threading.Event()
    inner = FakeMeasure.__call__

    def measure(partition: Any, example_inputs: Any, **kwargs: Any) -> Any:
        assert gate.wait(60), "the test never opened the gate"
        return inner(fake_measure, partition, example_inputs, **kwargs)

    import hierviz.latency as package

    package.measure = measure  # (fake_measure's monkeypatch restores hv.latency.measure after the test)
    return fake_measure, gate


# ----------------------------------------------------------------------------- scripted timings
# Backends whose speed a test decides: hv.tune's verdicts must not depend on timing noise.
RAN: list[str] = []  # which scripted backends ran during the current timed call


def fast(gm, example_inputs):
    """Right outputs; timed at half the eager model's latency."""
    def run(*args):
        RAN.append("fast")
        return gm(*args)
    return run


def same(gm, example_inputs):
    """Right outputs; timed like the eager model, within its noise."""
    def run(*args):
        RAN.append("same")
        return gm(*args)
    return run


SCRIPTED_COMPILERS = {"fast": fast, "same": same}
# deterministic "noise": +-3% in a fixed pattern, the same for every timing
JITTER = [((i * 7) % 11 - 5) * 0.006 for i in range(200)]


class ScriptedClock(FakeClock):
    """Stands in for the timing clock (hierviz.latency.timing.CLOCK): every timed call lasts
    10 ms (eager, `same`) or 5 ms (`fast` ran in it), with the fixed jitter, whatever it really
    took: one read before a call (it forgets what ran), one after."""

    def __init__(self) -> None:
        super().__init__(self.scripted)

    @staticmethod
    def scripted(k: int) -> float:
        return (5.0 if "fast" in RAN else 10.0) * (1 + JITTER[k % len(JITTER)])

    def __call__(self) -> int:
        if self.reads % 2 == 0:
            RAN.clear()
        return super().__call__()


@pytest.fixture
def scripted_timing(monkeypatch):
    """Timings from `ScriptedClock` instead of the clock, for hv.measure, its baselines and hv.tune."""
    import hierviz.latency.timing as timing
    from hierviz.widget import long_work

    monkeypatch.setattr(timing, "CLOCK", ScriptedClock())
    monkeypatch.setattr(long_work, "IN_WORKER", False)  # the clock stands in here, not in a worker process
