"""hv.numerics: per-subgraph error against eager, the culprit, the compile cache, memory, dtypes."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.latency import CompileCache, register_compiler, unregister_compiler
from hierviz.latency.compiling.backend_compilers import perturbing

from _measure_helpers import inductor_partition, load, snapshot, same_snapshot

ADD = torch.ops.aten.add.Tensor
RELU = "torch.ops.aten.relu.default"


@pytest.fixture
def perturb_backend():
    register_compiler("perturb", perturbing(ADD, 0.5))  # 0.5 added to every aten.add.Tensor output
    yield "perturb"
    unregister_compiler("perturb")


def _perturb_partition(gm):
    """resnet18 split at every relu: many subgraphs, some with a residual add."""
    return hv.partition(gm, priority=("perturb",), support={"perturb": hv.support.inductor()},
                        torch_executed_ops={RELU}, min_block_size=1)


def _first_with_add(part) -> str:
    targets = {n.name: n.target for n in part.graph.graph.nodes}
    return next(sg.tag for sg in part.subgraphs if sg.is_acc and any(targets[n] is ADD for n in sg.nodes))


def test_culprit_is_the_perturbed_subgraph_on_resnet18(resnet18, perturb_backend):
    _, x, gm = resnet18
    part = _perturb_partition(gm)
    assert len(part.subgraphs) >= 10
    before = snapshot(part)
    r = hv.numerics(part, x, device="cpu", cache=CompileCache())
    expected = _first_with_add(part)
    assert r.culprit == expected
    t = r.per_subgraph
    assert list(t["tag"]) == [str(n.target) for n in part.module.graph.nodes if n.op == "call_module"]
    i = list(t["tag"]).index(expected)
    # everything before it is exact (the test backend runs eagerly); from it on the error is carried
    assert (t["isolated_max_abs"][:i] == 0).all() and t["accumulated_ok"][:i].all()
    assert t["isolated_max_abs"][i] == pytest.approx(0.5) and not t["isolated_ok"][i]
    assert not t["accumulated_ok"][i:].all() and not t["accumulated_ok"].iloc[-1]
    # torch subgraphs after it are right in isolation: the error they show is carried in
    later_torch = t[(t.index > i) & (t["backend"] == "torch")]
    assert len(later_torch) and (later_torch["isolated_max_abs"] == 0).all()
    assert (later_torch["accumulated_max_abs"] > 0).all()
    assert not r.outputs_match and r.max_abs_error > 0
    assert r.culprit_text().startswith(f"the error starts in {expected} (perturb, ")
    assert "isolated max abs 0.5" in repr(r) and "\n" not in repr(r)
    assert r.to_dict()["mismatch_at"] == expected
    assert same_snapshot(before, snapshot(part))
    every_output = sum(_bytes(spec) for sg in part.subgraphs for spec in sg.outputs)
    # kept until the end, the reference would hold every subgraph's outputs; freed, the widest few
    assert 0 < r.peak_reference_bytes < every_output / 2


def _bytes(spec) -> int:
    n = 1
    for d in spec.shape:
        n *= int(d)
    return n * getattr(torch, str(spec.dtype).replace("torch.", "")).itemsize


def test_correct_inductor_partition_passes_and_reuses_measure_compiles(tiny_conv, inductor_compiles):
    _, x, gm = tiny_conv
    part = inductor_partition(gm, torch_executed_ops={RELU}, min_block_size=1)
    cache = CompileCache()
    m = hv.measure(part, x, cache=cache, warmup=0, iters=1, per_subgraph=False)
    compiled = inductor_compiles.calls
    assert compiled >= 1 and m.outputs_match
    r = hv.numerics(part, x, cache=cache)
    assert inductor_compiles.calls == compiled  # nothing compiled again
    acc = sum(sg.is_acc for sg in part.subgraphs)
    assert r.cache_misses == 0 and r.cache_hits == acc and r.compile_s == 0
    t = r.per_subgraph
    assert r.culprit is None and r.outputs_match
    assert t["isolated_ok"].all() and t["accumulated_ok"].all()
    assert set(t.loc[t["asked"] == "inductor", "status"]) == {"cached"}
    assert (t["isolated_cosine"] > 0.9999).all()
    assert set(t["dtypes"]) == {"float32"}
    first = part.subgraphs[0]
    assert t["tag"].iloc[0] == first.tag and t["shapes"].iloc[0] == str([int(d) for d in first.outputs[0].shape])
    assert "every subgraph is within tolerance of eager PyTorch" in repr(r)


def test_bf16_model_under_inductor_reports_errors_judged_by_bf16_tolerances(inductor_compiles):
    model = load("tiny_conv").to(torch.bfloat16)
    x = (torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16),)
    part = inductor_partition(hv.capture(model, x), torch_executed_ops={RELU}, min_block_size=1)
    cache = CompileCache()
    r = hv.numerics(part, x, cache=cache)
    t = r.per_subgraph
    ind = t[t["backend"] == "inductor"]
    assert len(ind) >= 2 and set(t["dtypes"]) == {"bfloat16"}
    assert set(ind["tolerance"]) == {"bfloat16: 1e-03 + 4e-02 x max|ref|"}
    # Whether TorchInductor's bf16 kernels round differently from eager depends on the CPU
    # (AMX/AVX512-BF16 give identical results): what is guaranteed is that every error is
    # within the bf16 tolerance and is judged by it.
    assert ind["isolated_ok"].all() and r.culprit is None and r.outputs_match
    assert ((ind["isolated_ratio"] >= 0) & (ind["isolated_ratio"] <= 1)).all()
    assert ((ind["isolated_max_abs"] == 0) == (ind["isolated_ratio"] == 0)).all()
    strict = hv.numerics(part, x, cache=cache, rtol=0.0, atol=0.0)  # the same errors, no tolerance
    failing = set(strict.per_subgraph.loc[~strict.per_subgraph["isolated_ok"], "tag"])
    assert failing == set(ind.loc[ind["isolated_max_abs"] > 0, "tag"])
    assert strict.culprit == next((tag for tag in t["tag"] if tag in failing), None)


def test_bad_arguments_are_measure_errors(tiny_conv):
    """A bad value is a MeasureError; an argument hv.numerics does not take is a ConfigError,
    as from every public function (hv.measure, hv.partition, ...)."""
    _, x, gm = tiny_conv
    part = inductor_partition(gm)
    with pytest.raises(hv.ConfigError, match=r"hv.numerics: unknown argument\(s\) \['itres'\]; did you mean 'iters'\?"):
        hv.numerics(part, x, itres=3)
    with pytest.raises(hv.ConfigError, match="unknown argument"):
        hv.measure(part, x, itres=3)
    with pytest.raises(hv.MeasureError, match="reference='float64' is not known"):
        hv.numerics(part, x, reference="float64")
    with pytest.raises(hv.MeasureError, match="rel_floor"):
        hv.numerics(part, x, rel_floor=0)
    with pytest.raises(hv.MeasureError, match="hv.Partition"):
        hv.numerics(gm, x)
    with pytest.raises(hv.MeasureError, match="hv.numerics"):
        hv.numerics(part, (torch.randn(2, 2),))
