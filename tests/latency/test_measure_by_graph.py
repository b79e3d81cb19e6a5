"""hv.measure and compile() of a multi-graph partition (ir="torch_compile"): the whole model runs
through torch.compile with hierviz's backend, each dynamo graph as its Partition's compiled split
module; outputs equal the model's, per_subgraph has a `graph` column, fallbacks and "nothing
accelerated" read right, a graph the capture did not see is partitioned anew, and the user's
model is never left compiled."""

from __future__ import annotations

import gc
import warnings

import pytest
import torch

import hierviz as hv
from hierviz.latency import CompileCache, MeasureWarning
from tests.dynamo_models import IfOnSum, load

pytestmark = pytest.mark.slow  # TorchInductor compiles of every graph

INDUCTOR = {"priority": ("inductor",), "support": {"inductor": hv.support.inductor()}, "min_block_size": 2}


def compiled_codes(model: torch.nn.Module) -> int:
    """How many compiled entries dynamo holds for the model's forward."""
    from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list

    return len(_debug_get_cache_entry_list(type(model).forward.__code__))


@pytest.fixture(scope="module")
def if_on_sum():
    model, x = load("if_on_sum")
    part = hv.partition(model, x, ir="torch_compile", **INDUCTOR)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    m = hv.measure(part, x, device="cpu", warmup=1, iters=3, cache=CompileCache())
    return model, x, part, m, before


def test_measurement_runs_every_graph_on_its_backend(if_on_sum) -> None:
    model, x, part, m, _ = if_on_sum
    assert m.outputs_match is True and m.max_abs_error is not None
    assert list(m.per_subgraph.columns[:2]) == ["graph", "calls"]
    expected = [(k, sg.tag, sg.backend) for k, p in enumerate(part.graphs) for sg in p.subgraphs]
    got = list(zip(m.per_subgraph.graph, m.per_subgraph.tag, m.per_subgraph.backend))
    assert got == expected and {b for *_, b in got} == {"inductor"}
    assert set(m.per_subgraph.status) == {"compiled"} and m.accelerated == len(expected)
    assert not m.nothing_accelerated and not m.fallbacks
    assert [r.tag for r in m.records] == [f"g{k}/{t}" for k, t, _ in expected]
    assert m.baseline_ms is not None and m.speedup is not None and m.per_subgraph.median_ms.notna().all()
    assert m.cache_misses == len(expected) and m.compile_s > 0


def test_the_model_is_never_changed_nor_left_compiled(if_on_sum) -> None:
    model, x, _, _, before = if_on_sum
    assert compiled_codes(model) == 0  # dynamo's caches reset: nothing of the model stays compiled
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert not model.training and type(model) is IfOnSum


def test_compile_hands_back_the_compiled_model(if_on_sum) -> None:
    model, x, part, _, _ = if_on_sum
    cache = CompileCache()
    compiled = part.compile(example_inputs=x, cache=cache)
    assert isinstance(compiled, hv.latency.by_graph.compiled_graphs.CompiledGraphs)
    assert [run.index for run in compiled.graphs] == [0, 1] and cache.misses >= 2
    with torch.no_grad():
        torch.testing.assert_close(compiled(*x), model(*x))
        other = torch.randn(1, 3, 8, 8, generator=torch.Generator().manual_seed(5))
        torch.testing.assert_close(compiled(other), model(other))  # same shapes, new values: no recompile
    assert len(compiled.graphs) == 2
    assert set(compiled.records) == {f"g{k}/{sg.tag}" for k, p in enumerate(part.graphs) for sg in p.subgraphs}
    assert all(r.status in ("compiled", "cached") for r in compiled.records.values())


def test_a_graph_the_capture_did_not_see_is_partitioned_anew(if_on_sum) -> None:
    model, x, part, _, _ = if_on_sum
    compiled = part.compile(cache=CompileCache())
    bigger = torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(2))  # other shapes: new graphs
    with torch.no_grad():
        torch.testing.assert_close(compiled(bigger), model(bigger))
    runs = compiled.graphs
    assert runs and all(run.index is None for run in runs)
    assert all(run.partition.config == part.config for run in runs)
    assert all(key.startswith("new/") for key in compiled.records)


def test_tensorrt_without_a_gpu_is_refused_before_the_model_runs() -> None:
    if torch.cuda.is_available():
        pytest.skip("TensorRT builds here")
    model, x = load("item_arith")
    part = hv.partition(model, x, ir="torch_compile", min_block_size=2)
    assert any(sg.backend == "tensorrt" for p in part.graphs for sg in p.subgraphs)
    with pytest.raises(hv.TensorRTUnavailableError,
                       match=r"^graph g0: TensorRT needs an NVIDIA GPU.*on_error=\"fallback\""):
        hv.measure(part, x, device="cpu", iters=1, warmup=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = hv.measure(part, x, device="cpu", iters=2, warmup=0, on_error="fallback", cache=CompileCache())
    fell = [f"g{k}/{sg.tag}" for k, p in enumerate(part.graphs) for sg in p.subgraphs if sg.backend == "tensorrt"]
    assert list(m.fallbacks) == fell and m.outputs_match is True
    assert m.nothing_accelerated and m.verdict.startswith("nothing accelerated")
    assert f"NOTHING ACCELERATED: every subgraph ran in eager PyTorch ({len(fell)} fell back)" in repr(m)
    ours = [w for w in caught if issubclass(w.category, MeasureWarning)]
    assert len(ours) == 1 and all(str(ours[0].message).count(f"{tag} (") == 1 for tag in fell)
    assert set(m.per_subgraph.loc[m.per_subgraph.status == "fallback", "asked"]) == {"tensorrt"}
    assert compiled_codes(model) == 0


def test_clear_errors() -> None:
    model, x = load("prints")
    part = hv.partition(model, x, ir="torch_compile", **INDUCTOR)
    with pytest.raises(hv.MeasureError, match="pass its example inputs"):
        hv.measure(part, None)
    with pytest.raises(hv.MeasureError, match="on_error must be one of"):
        part.compile(on_error="ignore")
    with pytest.raises(hv.ConfigError, match="warmup"):
        part.compile(warmup=3)  # a timing option: compile() takes compile options only
    cap = part.capture
    del model, part
    gc.collect()
    orphan = hv.partition(cap, **INDUCTOR)
    with pytest.raises(hv.MeasureError, match="model is gone.*model=model"):
        hv.measure(orphan, x)
