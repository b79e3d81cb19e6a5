"""Timing statistics, output comparison, weight lifting and cache keys."""

from __future__ import annotations

import math
import time

import pytest
import torch

import hierviz as hv
from _measure_helpers import BN, FakeClock, inductor_partition
from hierviz.latency import CompileCache, MeasureWarning, Stats, compare, time_fn
from hierviz.latency import timing
from hierviz.latency.compiling.compile_cache import cache_key
from hierviz.latency.compiling.backend_compilers import INDUCTOR, from_function
from hierviz.latency.compiling.lift import lift


# ----------------------------------------------------------------------------- timing
def test_stats_of_known_samples():
    s = Stats.of([float(v) for v in range(1, 11)])
    assert s.median_ms == 5.5 and s.iters == 10
    assert math.isclose(s.p10_ms, 1.9) and math.isclose(s.p90_ms, 9.1)
    assert math.isclose(s.mean_ms, 5.5) and math.isclose(s.std_ms, math.sqrt(55 / 6))
    assert math.isclose(s.cv, s.std_ms / 5.5) and s.noisy
    flat = Stats.of([2.0] * 5)
    assert flat.std_ms == 0 and flat.cv == 0 and not flat.noisy
    assert Stats.of([3.0]).p10_ms == 3.0


def test_time_fn_runs_warmup_then_iters_and_times_them():
    calls = []

    def fn():
        calls.append(1)
        time.sleep(0.002)

    s = time_fn(fn, torch.device("cpu"), warmup=2, iters=5)
    assert len(calls) == 7 and s.iters == 5 and len(s.samples_ms) == 5
    assert s.min_ms >= 1.9  # perf_counter_ns around each call, in ms
    with pytest.raises(ValueError):
        time_fn(fn, torch.device("cpu"), iters=0)


def test_noisy_timing_is_warned_and_recorded(tiny_conv, shared_cache, monkeypatch):
    _, x, gm = tiny_conv
    part = inductor_partition(gm, min_block_size=1, torch_executed_ops={BN})
    noisy = Stats.of([1.0, 1.0, 2.0, 1.0, 3.0])
    monkeypatch.setattr(timing, "CLOCK", FakeClock(lambda k: noisy.samples_ms[k % 5]))
    with pytest.warns(MeasureWarning, match="noisy"):
        m = hv.measure(part, x, cache=shared_cache, warmup=0, iters=5)
    assert m.cv == noisy.cv > 0.05 and m.noisy
    assert any("coefficient of variation" in w for w in m.warnings)


# ----------------------------------------------------------------------------- compare
def test_compare_tolerances_by_dtype():
    ref = torch.linspace(-4, 4, 100)
    ok, err, rel, _ = compare((ref + 1e-6,), (ref,))
    assert ok and 0 < err < 1e-5 and rel < 1e-6
    ok, err, _, problems = compare((ref + 0.1,), (ref,))
    assert not ok and math.isclose(err, 0.1, rel_tol=1e-3) and "max abs error" in problems[0]
    half = ref.half()
    assert compare((half + 0.01,), (half,))[0]  # fp16's tolerance is wider
    assert not compare((ref.double() + 1e-5,), (ref.double(),))[0]  # fp64's is narrower
    assert compare((ref + 0.1,), (ref,), rtol=0.1)[0]


def test_compare_integers_nans_shapes_and_counts():
    ints = torch.arange(10)
    assert compare([ints], [ints.clone()])[0]
    assert not compare([ints + 1], [ints])[0]
    nan = torch.tensor([1.0, float("nan"), float("inf")])
    ok, err, _, _ = compare([nan.clone()], [nan])
    assert ok and err == 0
    assert not compare([torch.tensor([1.0, 2.0, float("inf")])], [nan])[0]
    assert compare([torch.zeros(2, 3)], [torch.zeros(3, 2)]) == (False, math.inf, math.inf,
                                                                 ["output 0: shape (2, 3) != (3, 2)"])
    assert not compare([ints, ints], [ints])[0]
    assert compare({"a": ints}, (ints,))[0]  # structures are flattened


# ----------------------------------------------------------------------------- lift and keys
def test_lift_makes_weights_inputs_and_keeps_the_original(tiny_conv):
    _, x, gm = tiny_conv
    part = inductor_partition(gm, min_block_size=1, torch_executed_ops={BN})
    sub = part.module._run_on_acc_inductor_0  # conv1
    code = sub.code
    lifted = lift(sub)
    assert not any(n.op == "get_attr" for n in lifted.gm.graph.nodes)
    assert len(lifted.weights) == 2 and lifted.n_inputs == 1 and lifted.single
    assert not list(lifted.gm.parameters()) and not list(lifted.gm.buffers())
    out = lifted.gm(*x, *lifted.weights)
    assert isinstance(out, tuple) and torch.equal(out[0], sub(*x))
    assert sub.code == code and any(n.op == "get_attr" for n in sub.graph.nodes)


def _key(part, tag, inputs, options=None, compiler=INDUCTOR):
    lifted = lift(getattr(part.module, tag))
    return cache_key(lifted, inputs, compiler, options, torch.device("cpu"))


def test_cache_key_is_structural(resnet18):
    _, x, gm = resnet18
    part = hv.partition(gm, priority=("inductor",), min_block_size=2, support={
        "inductor": hv.support.ops(["torch.ops.aten.add.Tensor", "torch.ops.aten.relu.default"])})
    tags = [sg.tag for sg in part.subgraphs if sg.backend == "inductor"]
    specs = {sg.tag: sg for sg in part.subgraphs}

    def inputs(tag, dtype=torch.float32):
        return [torch.zeros(t.shape, dtype=dtype) for t in specs[tag].inputs]

    first, second = tags[0], tags[1]  # add+relu of the two blocks of stage 1: same shapes
    assert specs[first].nodes != specs[second].nodes
    assert _key(part, first, inputs(first)) == _key(part, second, inputs(second))
    # other shapes (stage 2), dtypes, options or compilers give other keys
    assert _key(part, first, inputs(first)) != _key(part, tags[2], inputs(tags[2]))
    assert _key(part, first, inputs(first)) != _key(part, first, inputs(first, torch.float64))
    assert _key(part, first, inputs(first)) != _key(part, first, inputs(first), {"max_autotune": True})
    other = from_function("inductor", lambda g, i: g)
    assert _key(part, first, inputs(first)) != _key(part, first, inputs(first), compiler=other)
    # non-contiguous inputs are another spec
    nc = [t.transpose(-1, -2).contiguous().transpose(-1, -2) for t in inputs(first)]
    assert _key(part, first, inputs(first)) != _key(part, first, nc)


def test_cache_counts_and_clear(tiny_conv):
    _, x, gm = tiny_conv
    cache = CompileCache()
    part = inductor_partition(gm, min_block_size=1, torch_executed_ops={BN})
    run = dict(cache=cache, warmup=0, iters=1, per_subgraph=False)

    def as_is(g, inputs):
        return g

    hv.measure(part, x, compilers={"inductor": as_is}, **run)
    hv.measure(part, x, compilers={"inductor": as_is}, **run)
    assert len(cache) == 3 and cache.misses == 3 and cache.hits == 3
    # another function (even of the same name) is another compiler
    hv.measure(part, x, compilers={"inductor": lambda g, i: g}, **run)
    hv.measure(part, x, compilers={"inductor": lambda g, i: g}, **run)
    assert len(cache) == 9 and cache.misses == 9
    assert "9 entries" in repr(cache)
    cache.clear()
    assert len(cache) == 0 and cache.hits == cache.misses == 0


def test_compiled_callables_may_return_a_bare_tensor(tiny_conv):
    """TensorRT modules return a tensor, not a 1-tuple, for one output; inductor a list."""
    _, x, gm = tiny_conv

    def bare(g, inputs):
        def run(*args):
            out = g(*args)
            return out[0] if len(out) == 1 else list(out)
        return run

    part = inductor_partition(gm, min_block_size=1, torch_executed_ops={BN})
    m = hv.measure(part, x, cache=CompileCache(), compilers={"inductor": bare}, warmup=0, iters=1)
    assert m.outputs_match is True and m.max_abs_error == 0


def test_unreadable_disk_artifacts_are_recompiled(tiny_conv, tmp_path):
    _, x, gm = tiny_conv
    part = inductor_partition(gm, min_block_size=1, torch_executed_ops={BN})
    run = dict(warmup=0, iters=1, per_subgraph=False, cache_dir=tmp_path)
    first = hv.measure(part, x, cache=CompileCache(), **run)
    files = list(tmp_path.rglob("*.bin"))
    if len(files) != 3:
        pytest.skip("this torch cannot save TorchInductor artifacts")
    for f in files:
        f.write_bytes(b"not an artifact")
    second = hv.measure(part, x, cache=CompileCache(), **run)
    assert first.cache_misses == second.cache_misses == 3 and second.outputs_match is True


def test_lift_to_another_device_moves_weights_and_device_literals():
    aten = torch.ops.aten
    root = torch.nn.Module()
    root.scale = torch.nn.Parameter(torch.ones(4))
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    scale = graph.get_attr("scale")
    ramp = graph.call_function(aten.arange.default, (4,), {"dtype": torch.float32, "device": torch.device("cpu")})
    out = graph.call_function(aten.add.Tensor, (graph.call_function(aten.mul.Tensor, (x, scale)), ramp))
    graph.output(out)
    gm = torch.fx.GraphModule(root, graph)

    lifted = lift(gm, torch.device("meta"))
    moved = next(n for n in lifted.gm.graph.nodes if n.target is aten.arange.default)
    assert moved.kwargs["device"] == torch.device("meta")
    assert ramp.kwargs["device"] == torch.device("cpu")  # the original is untouched
    assert [w.device.type for w in lifted.weights] == ["meta"]
    assert root.scale.device.type == "cpu"
    result = lifted.gm(torch.zeros(2, 4, device="meta"), *lifted.weights)
    assert result[0].device.type == "meta" and tuple(result[0].shape) == (2, 4)
    assert lift(gm, torch.device("meta")).weights[0] is lifted.weights[0]  # moved once
    same = lift(gm, torch.device("cpu"))
    assert torch.equal(same.gm(torch.zeros(2, 4), *same.weights)[0], torch.arange(4.0).expand(2, 4))


def test_lift_names_weights_of_modules_whose_path_is_no_python_name():
    """torchvision's regnet names its blocks "block1-0": the lifted placeholders must still be
    Python names, or the lifted module's code does not compile (SyntaxError)."""
    root = torch.nn.Module()
    root.add_module("block1-0", torch.nn.Module())
    getattr(root, "block1-0").register_parameter("weight", torch.nn.Parameter(torch.full((4,), 2.0)))
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.ops.aten.mul.Tensor, (x, graph.get_attr("block1-0.weight"))))
    lifted = lift(torch.fx.GraphModule(root, graph))
    assert lifted.weight_names == ("block1-0.weight",)
    assert torch.equal(lifted.gm(torch.ones(4), *lifted.weights)[0], torch.full((4,), 2.0))


def test_timing_takes_exactly_iters_samples_and_pairs_alternate():
    from hierviz.latency.timing import time_paired

    calls = []
    s = time_fn(lambda: calls.append(1), torch.device("cpu"), warmup=2, iters=25)
    assert len(calls) == 27 and s.iters == 25
    order = []
    base, cand = time_paired(lambda: order.append("a"), lambda: order.append("b"), torch.device("cpu"),
                             warmup=0, iters=4, batch=2)
    assert order == list("aabbbbaa") and base.iters == cand.iters == 4
