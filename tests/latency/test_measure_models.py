"""hv.measure on the tiny conv net, bert and resnet18 with TorchInductor and eager subgraphs (CPU)."""

from __future__ import annotations

import copy
import math
import statistics

import pandas as pd
import pytest
import torch

import hierviz as hv
from _measure_helpers import BN, GELU, SDPA, inductor_partition, same_snapshot, snapshot
from hierviz.latency import CompileCache, Measurement, MeasureWarning, register_compiler, unregister_compiler

FAST = dict(warmup=1, iters=3)


def _tiny_partition(gm):
    # batch norm forced to PyTorch: conv1 | bn | relu+conv2 | bn | relu -> 3 inductor, 2 eager
    return inductor_partition(gm, min_block_size=1, torch_executed_ops={BN})


def test_tiny_conv_statistics_and_outputs(tiny_conv, shared_cache):
    model, x, gm = tiny_conv
    part = _tiny_partition(gm)
    m = hv.measure(part, x, cache=shared_cache, **FAST)

    assert isinstance(m, Measurement)
    assert m.device == "cpu" and m.iters == 3 and m.warmup == 1
    assert 0 < m.p10_ms <= m.median_ms <= m.p90_ms
    assert len(m.timing.samples_ms) == 3
    # std_ms is the samples' standard deviation and cv its share of their mean
    assert math.isclose(m.std_ms, statistics.stdev(m.timing.samples_ms))
    assert math.isclose(m.cv, m.std_ms / statistics.fmean(m.timing.samples_ms))
    assert m.baseline_ms > 0 and math.isclose(m.speedup, m.baseline_ms / m.median_ms)
    # compile_s is the time this call spent compiling: each subgraph compiled now, none taken from the cache
    assert m.cache_hits + m.cache_misses == 3
    compiled = m.per_subgraph[m.per_subgraph.status == "compiled"]
    assert len(compiled) == m.cache_misses and (compiled.compile_s > 0).all()
    assert (m.per_subgraph[m.per_subgraph.status != "compiled"].compile_s == 0).all()
    assert math.isclose(m.compile_s, m.per_subgraph.compile_s.sum())
    # the split model computes what eager computes
    assert m.outputs_match is True and m.max_abs_error < 1e-3
    with torch.no_grad():
        assert m.max_abs_error <= 1e-3 * float(model(*x).abs().max()) + 1e-5

    table = m.per_subgraph
    assert list(table.columns[:6]) == ["tag", "backend", "median_ms", "share", "asked", "status"]
    assert list(table.tag) == [sg.tag for sg in part.subgraphs]
    assert list(table.backend) == [sg.backend for sg in part.subgraphs]
    assert list(table.asked) == list(table.backend)  # nothing fell back
    assert [(r.tag, r.asked, r.ran) for r in m.records] == [(sg.tag, sg.backend, sg.backend) for sg in part.subgraphs]
    assert (table.backend == "inductor").sum() == 3 and (table.backend == "torch").sum() == 2
    assert (table.median_ms > 0).all()
    assert math.isclose(table.share.sum(), 1.0, rel_tol=1e-9)
    assert set(table[table.backend == "torch"].status) == {"eager"}
    assert set(table[table.backend == "inductor"].status) <= {"compiled", "cached"}
    assert math.isclose(m.glue_ms, m.median_ms - table.median_ms.sum())

    row = m.to_dict()
    for k in ("median_ms", "p10_ms", "p90_ms", "std_ms", "cv", "iters", "device", "compile_s", "cache_hits",
              "cache_misses", "baseline_ms", "speedup", "max_abs_error", "outputs_match", "warnings",
              "fallbacks", "tf32", "compile_state"):
        assert k in row
    assert row["fallbacks"] == 0 and row["subgraphs_inductor"] == 3 and row["subgraphs_torch"] == 2
    assert row["tf32"] is False and m.precision["torch_float32_matmul_precision"] == "highest"
    assert m.precision["dtypes"] == ["float32"]
    frame = pd.DataFrame([row, row])
    assert len(frame) == 2 and frame.median_ms.dtype.kind == "f"
    text = repr(m)
    assert text.startswith("<hv.Measurement cpu:") and "speedup" in text and "outputs match" in text
    assert "<table" in m._repr_html_()


def test_measure_leaves_partition_untouched(tiny_conv, shared_cache):
    _, x, gm = tiny_conv
    part = _tiny_partition(gm)
    before = snapshot(part)
    graph_out = part.graph(*x)
    hv.measure(part, x, cache=shared_cache, **FAST)
    assert same_snapshot(before, snapshot(part))
    assert all(isinstance(c, torch.fx.GraphModule) for _, c in part.module.named_children())
    assert torch.equal(part.graph(*x)[0], graph_out[0])


def test_hv_measure_is_callable_after_importing_the_package(tiny_conv, shared_cache):
    import hierviz.latency  # noqa: F401  (the package must not shadow the function)

    _, x, gm = tiny_conv
    assert callable(hv.measure) and hv.measure.__module__.startswith("hierviz.latency")
    hv.measure(_tiny_partition(gm), x, cache=shared_cache, warmup=0, iters=1, per_subgraph=False)
    m = hv.measure(_tiny_partition(gm), x, cache=shared_cache, warmup=0, iters=1, per_subgraph=False)
    assert m.cache_misses == 0 and m.cache_hits == 3
    assert m.per_subgraph.median_ms.isna().all()


def test_same_structure_other_weights_reuses_compiles_with_its_own_weights(tiny_conv, shared_cache):
    """Inductor artifacts take weights as inputs: a model with the same structure and other
    weights hits the cache and still computes its own outputs."""
    model, x, gm = tiny_conv
    hv.measure(_tiny_partition(gm), x, cache=shared_cache, warmup=0, iters=1, per_subgraph=False)
    other = copy.deepcopy(model)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(torch.randn_like(p))
    gm2 = hv.capture(other, x)
    m = hv.measure(_tiny_partition(gm2), x, cache=shared_cache, warmup=0, iters=1, per_subgraph=False)
    assert m.cache_hits == 3 and m.cache_misses == 0
    assert m.outputs_match is True
    with torch.no_grad():
        assert not torch.allclose(model(*x), other(*x))  # a stale-weights bug would be caught


def test_compiler_that_bakes_weights_is_keyed_on_their_values(tiny_conv):
    """A compiler that builds weights into its artifact (as TensorRT does) gets one per set of
    weight values; equal values in other tensors still hit."""
    model, x, gm = tiny_conv
    seen = []

    def bake(gm_baked, inputs):
        seen.append(sorted(n for n, _ in gm_baked.named_buffers()))
        assert not any(n.op == "placeholder" and n.name.startswith("_lifted_") for n in gm_baked.graph.nodes)
        return gm_baked

    register_compiler("baked_test", bake, lifts_weights=False)
    try:
        cache = CompileCache()
        cfg = dict(priority=("baked_test",), support={"baked_test": hv.support.ops([
            "torch.ops.aten.convolution.default", "torch.ops.aten.relu.default"])},
            min_block_size=1, torch_executed_ops={BN})
        run = dict(cache=cache, warmup=0, iters=1, per_subgraph=False)
        m1 = hv.measure(hv.partition(gm, **cfg), x, **run)
        assert m1.cache_misses == 3 and m1.outputs_match is True
        assert seen and all(names for names in seen[:1])  # conv1's weight and bias are buffers

        same = hv.capture(copy.deepcopy(model), x)  # equal values, other tensors
        m2 = hv.measure(hv.partition(same, **cfg), x, **run)
        assert m2.cache_hits == 3 and m2.cache_misses == 0 and m2.outputs_match is True

        other = copy.deepcopy(model)
        with torch.no_grad():
            other.conv2.weight.mul_(2)
        m3 = hv.measure(hv.partition(hv.capture(other, x), **cfg), x, **run)
        # conv1 and the last relu are unchanged; relu+conv2 has new weights
        assert m3.cache_misses == 1 and m3.cache_hits == 2 and m3.outputs_match is True
    finally:
        unregister_compiler("baked_test")


@pytest.mark.slow  # over 5 s of CPU: left out of make check, run by make test
def test_second_config_compiles_only_new_subgraphs(bert, inductor_compiles):
    _, x, gm = bert
    cache = CompileCache()
    a = inductor_partition(gm, min_block_size=1, torch_executed_ops={SDPA, GELU})
    b = inductor_partition(gm, min_block_size=1, torch_executed_ops={SDPA})
    ma = hv.measure(a, x, cache=cache, **FAST)
    keys_a = set(cache.keys())
    assert ma.outputs_match is True
    # the two encoder layers have an identical block: compiled once, reused within the call
    assert ma.cache_hits >= 1 and ma.cache_misses == len(keys_a) == inductor_compiles.calls

    inductor_compiles.calls = 0
    mb = hv.measure(b, x, cache=cache, **FAST)
    new = set(cache.keys()) - keys_a
    assert mb.outputs_match is True
    assert mb.cache_hits >= 1, "shared subgraphs are not recompiled"
    assert mb.cache_misses == len(new) == inductor_compiles.calls > 0
    compiled = mb.per_subgraph[mb.per_subgraph.status == "compiled"]
    assert len(compiled) == len(new)
    assert (compiled.compile_s > 0).all()
    assert (mb.per_subgraph[mb.per_subgraph.status == "cached"].compile_s == 0).all()


@pytest.mark.slow  # over 5 s of CPU: left out of make check, run by make test
def test_sweep_min_block_size_compiles_each_distinct_subgraph_once(bert, inductor_compiles):
    _, x, gm = bert
    cache = CompileCache()
    results = []
    for size in range(1, 9):
        part = inductor_partition(gm, min_block_size=size, torch_executed_ops={SDPA, GELU})
        m = hv.measure(part, x, cache=cache, warmup=0, iters=1, per_subgraph=False, baseline=False)
        n_acc = sum(1 for sg in part.subgraphs if sg.backend == "inductor")
        assert m.cache_hits + m.cache_misses == n_acc
        assert m.outputs_match is True
        results.append(m)
    misses = sum(m.cache_misses for m in results)
    assert misses == len(cache) == inductor_compiles.calls
    assert sum(m.cache_hits for m in results) > misses  # most configs reuse earlier compiles
    compiled_keys = [k for m in results for k in m.per_subgraph[m.per_subgraph.status == "compiled"].key]
    assert len(compiled_keys) == len(set(compiled_keys)) == misses


@pytest.mark.slow  # over 5 s of CPU: left out of make check, run by make test
def test_resnet18_identical_blocks_share_compiles_and_match(resnet18, shared_cache):
    _, x, gm = resnet18
    part = hv.partition(gm, priority=("inductor",), min_block_size=2, support={
        "inductor": hv.support.ops(["torch.ops.aten.add.Tensor", "torch.ops.aten.relu.default"])})
    n_acc = sum(1 for sg in part.subgraphs if sg.backend == "inductor")
    assert n_acc == 8  # add+relu closing each basic block
    m = hv.measure(part, x, cache=shared_cache, warmup=1, iters=2)
    assert m.outputs_match is True and m.max_abs_error < 1e-4
    # blocks of one stage have the same shapes: 4 stages -> 4 compiles for 8 subgraphs
    assert m.cache_misses + m.cache_hits == 8
    assert len(set(m.per_subgraph[m.per_subgraph.backend == "inductor"].key)) == 4
    assert len(m.per_subgraph) == len(part.subgraphs)
    assert (m.per_subgraph.median_ms > 0).all()


def test_disk_cache_is_reused_by_a_fresh_process_cache(tiny_conv, tmp_path, inductor_compiles):
    _, x, gm = tiny_conv
    part = _tiny_partition(gm)
    first = hv.measure(part, x, cache=CompileCache(), cache_dir=tmp_path, warmup=0, iters=1, per_subgraph=False)
    if any("not written to the disk cache" in w for w in first.warnings):
        pytest.skip("this torch cannot save TorchInductor artifacts: " + "; ".join(first.warnings))
    assert first.cache_misses == 3 and inductor_compiles.calls == 3
    assert len(list(tmp_path.rglob("*.bin"))) == 3 and len(list(tmp_path.rglob("*.json"))) == 3

    inductor_compiles.calls = 0
    second = hv.measure(part, x, cache=CompileCache(), cache_dir=tmp_path, warmup=0, iters=1, per_subgraph=False)
    assert second.cache_hits == 3 and second.cache_misses == 0 and inductor_compiles.calls == 0
    assert second.outputs_match is True


def test_wrong_outputs_are_a_flag_not_a_crash(tiny_conv):
    _, x, gm = tiny_conv

    def off_by_one(g, inputs):
        return lambda *args: [o + 1 for o in g(*args)]

    with pytest.warns(MeasureWarning, match="outputs differ"):
        m = hv.measure(_tiny_partition(gm), x, cache=CompileCache(), compilers={"inductor": off_by_one},
                       warmup=0, iters=1, per_subgraph=False)
    assert m.outputs_match is False
    assert m.max_abs_error >= 0.5
    assert any("outputs differ" in w for w in m.warnings)
    assert "OUTPUTS DIFFER" in repr(m)


def test_progress_callback_and_check_off(tiny_conv, shared_cache):
    _, x, gm = tiny_conv
    calls = []
    m = hv.measure(_tiny_partition(gm), x, cache=shared_cache, check=False, warmup=0, iters=1,
                   progress=lambda stage, done, total: calls.append((stage, done, total)))
    assert m.outputs_match is None and m.max_abs_error is None
    assert calls and calls[-1][1] == calls[-1][2] == len(calls)
    assert any("_run_on_acc_inductor_0" in stage for stage, _, _ in calls)
