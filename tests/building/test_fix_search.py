"""Which fix part.build() offers: of the fixes shown to build, the one keeping the most in
TensorRT; the failing node's op (or the smallest failing part's) tried first; the setting
Torch-TensorRT's error names (truncate_double=True) offered as the fix, shown to build; and what
each fix costs.

The failures are the test's own (tests/building/failing_converters.py) or Torch-TensorRT's
float64 refusal, which its converters raise whatever TensorRT's builder does."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import hierviz as hv
from hierviz import trt

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")

if trt.available():
    from tests.building.failing_converters import CONVERT_MARK, PAIR_MARK
else:  # pragma: no cover
    CONVERT_MARK = PAIR_MARK = 0.0


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE", "0")  # every count below is of builds made here


class SinsThenClamp(nn.Module):
    """sin three times, clamp(min=PAIR_MARK), Linear, ReLU: the engine fails at build because
    the clamp's input comes from a layer of the engine. Moving aten.sin (3 ops) or aten.clamp
    (1 op) makes it build."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(torch.clamp(x.sin().sin().sin(), min=PAIR_MARK)).relu()


class SinThenRefused(nn.Module):
    """sin, Linear, clamp(min=CONVERT_MARK) (its converter raises), Linear, ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.clamp(self.a(x.sin()), min=CONVERT_MARK)).relu()


class DoubleNet(nn.Module):
    """Linear, ReLU, times 2, in float64: Torch-TensorRT refuses the float64 weight and says to
    set truncate_double=True."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).relu() * 2


class NoisyNet(nn.Module):
    """Linear plus torch.rand: Torch-TensorRT's rand converter makes a float64 constant (ViTMAE's
    random masking fails so)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.lin(x) + torch.rand(2, 8)).relu()


class RefusedThenDouble(nn.Module):
    """A clamp whose converter raises, then a float64 Linear: the second failure shows only once
    the first is fixed."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8).double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.clamp(self.a(x), min=CONVERT_MARK).relu().double()).relu()


def _part(cls: type, dtype: torch.dtype = torch.float32) -> hv.Partition:
    torch.manual_seed(0)
    model = (cls() if dtype == torch.float32 else cls().to(dtype)).eval()
    return hv.partition(model, (torch.randn(2, 8, dtype=dtype),), min_block_size=1)


def _tensorrt_ops(part: hv.Partition) -> int:
    return sum(sg.compute_ops for sg in part.subgraphs if sg.backend == "tensorrt")


def test_the_fix_keeps_more_accelerated_ops_than_a_bigger_fix_that_also_builds():
    part = _part(SinsThenClamp)
    builds = part.build()
    assert builds.fix == {"aten.clamp"}
    bigger = hv.partition(part, torch_executed_ops={"aten.sin"})
    assert bigger.build().ok  # moving the three sins builds too, and fewer subgraphs (2 against 3) ...
    fixed = builds.fixed()
    assert fixed.build().ok
    assert bigger.stats["subgraphs"] < fixed.stats["subgraphs"]
    # ... but keeps fewer ops accelerated
    assert bigger.stats["accelerated_ops"] < fixed.stats["accelerated_ops"] == part.stats["accelerated_ops"] - 1
    # the builder's failure names no node: the smallest failing part (the last sin and the clamp) is
    # searched, and its op keeping the most is built first, and works
    assert (builds.fix_reductions, builds.fix_tested) == (1, 1)


def test_the_failing_nodes_op_is_tried_first():
    """sin alone gives fewer subgraphs than clamp, but the converter failed at the clamp: the
    search builds the clamp's fix first, and nothing else."""
    part = _part(SinThenRefused)
    assert hv.partition(part, torch_executed_ops={"aten.sin"}).stats["subgraphs"] < \
        hv.partition(part, torch_executed_ops={"aten.clamp"}).stats["subgraphs"]
    builds = part.build()
    assert builds.fix == {"aten.clamp"}
    assert builds.fix_tested == 1 and builds.fix_reductions == 0
    engines = builds.fixed().stats["subgraphs_by_backend"]["tensorrt"]  # each built once
    assert f"  The fix search built 1 candidate(s) (at most 40 per graph): {engines} builds." in builds.lines()


@pytest.mark.parametrize("cls, dtype", [(DoubleNet, torch.float64), (NoisyNet, torch.float32)])
def test_a_failure_naming_truncate_double_gets_that_setting_as_the_fix(cls, dtype):
    part = _part(cls, dtype)
    builds = part.build()
    (row,) = builds.rows
    assert row.stage == "convert" and "truncate_double=True" in row.error
    assert builds.fix_settings == {"truncate_double": True}
    assert builds.fix == frozenset()  # no op moved
    ops = part.stats["accelerated_ops"]
    frozen = builds.fix_frozen_random  # NoisyNet's engine then holds rand's values drawn at build (its fix says so)
    assert [f.op for f in frozen] == (["torch.ops.aten.rand.default"] if cls is NoisyNet else [])
    assert row.fix == (f"trt_settings={{'truncate_double': True}}: every engine builds; it moves no compute op out "
                       f"of TensorRT: accelerated ops {ops} → {ops}, subgraphs 1 → 1 (tensorrt=1)"
                       + "".join(f"; {f.text()}" for f in frozen))
    assert builds.fix_change() == "trt_settings={'truncate_double': True}"
    assert part.blockers(builds=builds).iloc[0].change == "trt_settings={'truncate_double': True}"  # its row says it
    assert builds.fixed().build(trt_settings=builds.fix_settings).ok  # shown to build
    assert not builds.fixed().build(fix=False).ok  # the setting is the fix


def test_the_setting_is_added_to_the_builds_own_settings():
    part = _part(DoubleNet, torch.float64)
    builds = part.build(trt_settings={"optimization_level": 2})
    assert builds.fix_settings == {"optimization_level": 2, "truncate_double": True}
    assert builds.rows[0].fix.startswith("trt_settings={'optimization_level': 2, 'truncate_double': True}: ")


def test_failures_are_followed_until_every_engine_builds_with_ops_and_the_named_setting():
    part = _part(RefusedThenDouble)
    builds = part.build()
    assert builds.fix == {"aten.clamp"} and builds.fix_settings == {"truncate_double": True}
    assert builds.fix_change() == "torch_executed_ops=['aten.clamp'] with trt_settings={'truncate_double': True}"
    assert builds.fixed().build(trt_settings=builds.fix_settings).ok


def test_each_fix_states_what_it_costs():
    part = _part(SinThenRefused)
    builds = part.build()
    fixed = builds.fixed()
    cost = builds.fix_cost
    before, after = part.stats, fixed.stats
    assert cost is not None and cost.added == ("aten.clamp",)
    assert cost.moved == _tensorrt_ops(part) - _tensorrt_ops(fixed) == 1
    assert cost.accelerated_ops == (before["accelerated_ops"], after["accelerated_ops"])
    assert cost.subgraphs == (before["subgraphs"], after["subgraphs"]) == (1, 3)
    assert builds.rows[0].fix == (f"torch_executed_ops=['aten.clamp']: every engine builds; it moves 1 compute op "
                                  f"out of TensorRT: accelerated ops {before['accelerated_ops']} → "
                                  f"{after['accelerated_ops']}, subgraphs 1 → 3 (tensorrt=2, torch=1)")


class RefusedBreakNoisy(nn.Module):
    """On torch.compile's path, two graphs: a clamp whose converter raises, then (after a graph
    break) torch.rand, which Torch-TensorRT makes a float64 constant."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.clamp(self.a(x), min=CONVERT_MARK).relu()
        torch._dynamo.graph_break()
        return (self.b(y) + torch.rand(2, 8)).relu()


def test_every_graphs_fix_together_is_shown_to_build_and_says_its_cost():
    torch.manual_seed(0)
    mp = hv.partition(RefusedBreakNoisy().eval(), (torch.randn(2, 8),), min_block_size=1, ir="torch_compile")
    with warnings.catch_warnings():
        warnings.simplefilter("error", hv.ConfigWarning)  # g1 has no clamp: applying g0's fix there is no mistake
        builds = mp.build()
    assert [r.stage for r in builds.rows if not r.built] == ["convert", "convert"]
    assert builds.fix == {"aten.clamp"} and builds.fix_settings == {"truncate_double": True}
    fixed = builds.fixed()
    assert fixed.build(trt_settings=builds.fix_settings).ok
    before, after = mp.stats, fixed.stats
    assert builds.fix_text == (f"torch_executed_ops=['aten.clamp'] with trt_settings={{'truncate_double': True}}: "
                               f"every engine of every graph builds; it moves 1 compute op out of TensorRT: "
                               f"accelerated ops {before['accelerated_ops']} → {after['accelerated_ops']}, subgraphs "
                               f"{before['subgraphs']} → {after['subgraphs']} (tensorrt=3, torch=1)"
                               + "".join(f"; {f.text()}" for f in builds.fix_frozen_random))
    assert [(f.graph, f.op) for f in builds.fix_frozen_random] == [("g1", "torch.ops.aten.rand.default")]


def test_of_the_smallest_failing_parts_ops_one_that_builds_is_taken_before_one_that_fails_otherwise(monkeypatch):
    """The builder (the test's) refuses an engine holding a split, a getitem and a permute: the
    smallest failing part is the three. Moving getitem, which keeps every compute op, fails to
    convert instead; moving split or permute builds, and is the fix, without a second
    smallest-part search down getitem's failure."""
    from tests.building.models import FusedQKV, made

    real = trt.convert_and_build

    def refuses_the_three(gm, settings=None, **options):
        held = {getattr(n.target, "__name__", "").split(".")[0] for n in gm.graph.nodes if n.op == "call_function"}
        if {"split", "getitem", "permute"} <= held:
            return trt.EngineBuild("build", 1, 0.0, 0.0, exception="RuntimeError",
                                   error="the test's builder refuses split, getitem and permute together")
        return real(gm, settings, **options)

    monkeypatch.setattr(trt, "convert_and_build", refuses_the_three)
    part = hv.partition(*made(FusedQKV, 1, 16, 64), min_block_size=2)
    builds = part.build()
    assert builds.fix_reductions == 1
    (moved,) = builds.fix
    assert moved in ("aten.split.Tensor", "aten.permute")
    assert builds.fixed().build().ok
