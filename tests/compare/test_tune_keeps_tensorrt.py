"""hv.tune, the explorer's "find fastest" and "apply best" from a setting with TensorRT, where
TensorRT cannot be timed (no CUDA GPU): every setting proposed keeps TensorRT's engines (the
TensorRT subgraphs of the setting searched from), only the parts outside TensorRT are timed,
and the verdict says so. Timings are scripted (tests/small_net.py): no test depends on the CPU."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import hierviz as hv
from hierviz.compare.tune_space import default_space
from hierviz.compare.tune_trial import measure_trial
from hierviz.latency.measure_options import MeasureOptions
from hierviz.partitioner import Partition

from tests.small_net import SCRIPTED_COMPILERS, fast

EVERY_CALL = hv.support.where(lambda node: node.op == "call_function", name="every op")
SUPPORT = {"fast": EVERY_CALL, "same": EVERY_CALL}
MEASURE = {"warmup": 0, "iters": 20, "compilers": SCRIPTED_COMPILERS}
NOT_TIMED = ("TensorRT's engines were not timed: no CUDA GPU here; ranked by the parts that run outside "
             "TensorRT (its subgraphs ran in eager PyTorch, the same in every setting compared)")


def engines(part: Partition) -> list[tuple[str, ...]]:
    """The TensorRT subgraphs' nodes: what TensorRT's engines would hold."""
    return [sg.nodes for sg in part.subgraphs if sg.backend == "tensorrt"]


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    """These tests are about a machine without a CUDA GPU (on one with a GPU TensorRT is timed)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_a_search_from_tensorrt_never_drops_it(small, scripted_timing):
    model, inputs, gm = small
    base = hv.Config(priority=("tensorrt",), support=SUPPORT, min_block_size=1)
    space = {"priority": [("tensorrt",), ("fast",), ("tensorrt", "fast"), ("fast", "tensorrt")],
             "min_block_size": [1, 5]}
    res = hv.tune(model, inputs, space, base=base, measure=MEASURE, pruning=False, progress=False, budget=8)
    rows = res.trials.set_index(["priority", "min_block_size"])
    # ("fast",) alone would time fastest here: it drops TensorRT, so it is not measured, nor best
    for changed in [("fast", 1), ("fast", 5), ("fast>tensorrt", 1), ("tensorrt", 5)]:
        assert rows.loc[changed, "status"] == "changes tensorrt", changed
        assert rows.loc[changed, "median_ms"] != rows.loc[changed, "median_ms"]      # not timed
    assert "TensorRT" in rows.loc[("fast", 1), "error"]
    # TensorRT alone: measured, and its subgraphs count as accelerated (they are, on the GPU)
    assert rows.loc[("tensorrt", 1), "status"] == "measured"
    assert not rows.loc[("tensorrt", 1), "nothing_accelerated"] and rows.loc[("tensorrt", 1), "fallbacks"] == 0
    assert res.best.priority == ("tensorrt", "fast") and res.best.min_block_size == 1
    assert engines(hv.partition(gm, config=res.best)) == engines(hv.partition(gm, config=base))
    assert res.beat_eager and NOT_TIMED in res.verdict
    assert res.verdict.startswith(f"trial {res.best_trial} beats eager PyTorch (your nn.Module): 2.00x")
    assert res.not_timed == NOT_TIMED and f"verdict: {res.verdict}" in repr(res)
    # what ran is said as it ran: TensorRT's subgraphs in eager PyTorch, not as engines
    per = res.best_measurement.per_subgraph
    assert set(per.loc[per["asked"] == "tensorrt", "backend"]) == {"torch"}


def test_the_default_space_keeps_tensorrt_engines(small):
    model, inputs, gm = small
    base = hv.Config(priority=("tensorrt", "inductor"), min_block_size=1)
    space = default_space(gm, inputs, base=base, device="cpu")
    assert space["priority"] and all("tensorrt" in p for p in space["priority"])
    kept = engines(hv.partition(gm, config=base))
    for priority in space["priority"]:
        part = hv.partition(gm, config=base.replace(priority=priority,
                                                    support={"inductor": hv.support.inductor()}))
        assert engines(part) == kept, priority


def test_a_search_without_a_space_measures_only_settings_with_the_same_engines(small, scripted_timing,
                                                                              monkeypatch):
    from hierviz.compare import tune_trial

    measured: list[Partition] = []
    real = tune_trial.measure_with

    def seen(part, *args, **kwargs):
        measured.append(part)
        return real(part, *args, **kwargs)

    monkeypatch.setattr(tune_trial, "measure_with", seen)
    model, inputs, gm = small
    base = hv.Config(priority=("tensorrt", "inductor"), min_block_size=1)
    res = hv.tune(model, inputs, base=base, measure={**MEASURE, "compilers": {"inductor": fast}}, pruning=False,
                  progress=False, budget=6)
    kept = engines(hv.partition(gm, config=base))
    assert len(measured) >= 3                          # the default's two timings and the final one, at least
    for part in measured:
        assert "tensorrt" in part.config.priority and engines(part) == kept, part.config.label()
    assert "tensorrt" in res.best.priority and engines(hv.partition(gm, config=res.best)) == kept
    assert NOT_TIMED in res.verdict
    assert not any("tensorrt left out" in n for n in res.notes)


def test_tensorrt_fallbacks_of_a_kept_setting_are_not_the_trials_fallbacks(small, scripted_timing):
    """Where TensorRT is kept and not timed, its subgraphs running eagerly is what the search asked
    for: the trial is measured. Any other subgraph falling back still makes it a "fallback"."""
    model, inputs, gm = small
    part = hv.partition(gm, priority=("tensorrt", "fast"), support=SUPPORT, min_block_size=1)
    options = MeasureOptions.of({**MEASURE, "on_error": "fallback"})
    assert measure_trial(part, inputs, torch.device("cpu"), options, untimed=True).status == "measured"
    assert measure_trial(part, inputs, torch.device("cpu"), options).status == "fallback"


@torch.library.custom_op("hvtest_keep_trt::twist", mutates_args=())
def twist(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) * 0.5


@twist.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class CustomOpNet(nn.Module):
    """Linear layers TensorRT takes around a custom op it has no converter for (issue 55's repro)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b(torch.relu(self.a(x))))
        y = torch.special.i0e(twist(y))
        return torch.tanh(self.c(torch.relu(y)))


def test_find_fastest_and_apply_best_keep_tensorrt(scripted_timing):
    torch.manual_seed(0)
    model, x = CustomOpNet().eval(), torch.randn(4, 16)
    shown = hv.Config(priority=("tensorrt", "inductor"), min_block_size=1)
    ex = hv.explore(model, x, shown, debounce=0)
    try:
        before = engines(ex.partition)
        assert before
        ex.find_fastest(budget=4, wait=True, measure={**MEASURE, "compilers": {"inductor": fast}})
        assert ex.fastest is not None and not ex.internal_errors
        assert "tensorrt" in ex.fastest.best.priority
        line = ex.panels["fastest"].value
        assert "TensorRT&#x27;s engines were not timed: no CUDA GPU here" in line
        ex.apply_fastest()
        assert "tensorrt" in ex.config.priority and engines(ex.partition) == before
    finally:
        ex.close()
