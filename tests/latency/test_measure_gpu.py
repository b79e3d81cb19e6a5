"""hv.measure on a CUDA GPU: CUDA-event timing, device moves, TensorRT (skipped without a GPU)."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from _measure_helpers import BN, SDPA, inductor_partition
from hierviz.latency import CompileCache

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_inductor_on_cuda_from_a_cpu_capture(tiny_conv):
    """A graph captured on CPU is measured on the GPU: weights move, the partition does not."""
    _, x, gm = tiny_conv
    part = inductor_partition(gm, min_block_size=1, torch_executed_ops={BN})
    m = hv.measure(part, x, cache=CompileCache(), warmup=3, iters=20)
    assert m.device.startswith("cuda")
    assert m.outputs_match is True and 0 < m.p10_ms <= m.median_ms <= m.p90_ms
    assert m.baseline_ms > 0 and (m.per_subgraph.median_ms > 0).all()
    assert all(t.device.type == "cpu" for t in part.graph.state_dict().values())


def test_bert_captured_on_cuda(bert):
    model, x, _ = bert
    import copy

    cuda_model = copy.deepcopy(model).cuda()
    xs = tuple(t.cuda() for t in x)
    gm = hv.capture(cuda_model, xs)
    cache = CompileCache()
    part = inductor_partition(gm, min_block_size=1, torch_executed_ops={SDPA})
    m = hv.measure(part, xs, cache=cache, warmup=3, iters=20)
    assert m.device.startswith("cuda") and m.outputs_match is True
    again = hv.measure(part, xs, cache=cache, warmup=1, iters=5)
    assert again.cache_misses == 0


needs_trt_build = pytest.mark.skipif(not hv.trt.info().can_build,
                                     reason=f"TensorRT cannot build here: {hv.trt.info().reason}")


@pytest.fixture(scope="module")
def cuda_tiny_conv(tiny_conv):
    import copy

    model, x, _ = tiny_conv
    cuda_model = copy.deepcopy(model).cuda()
    xs = tuple(t.cuda() for t in x)
    return cuda_model, xs, hv.capture(cuda_model, xs)


@needs_trt_build
def test_tensorrt_subgraphs_compile_match_and_are_named(cuda_tiny_conv):
    model, xs, gm = cuda_tiny_conv
    part = hv.partition(gm, min_block_size=1, torch_executed_ops={BN})
    tags = [sg.tag for sg in part.subgraphs if sg.backend == "tensorrt"]
    assert tags
    cache = CompileCache()
    m = hv.measure(part, xs, cache=cache, warmup=3, iters=20)
    assert m.outputs_match is True and not m.fallbacks, m.warnings
    trt_rows = m.per_subgraph[m.per_subgraph.asked == "tensorrt"]
    assert list(trt_rows.tag) == tags and (trt_rows.backend == "tensorrt").all()
    assert set(trt_rows.status) <= {"compiled", "cached"} and (trt_rows.median_ms > 0).all()
    assert m.precision["tensorrt_disable_tf32"] is True and m.compile_state["tensorrt"] in ("cold", "warm")
    split = hv.latency.compile_split(part, xs, cache=cache)
    assert [split.runners[t].fn.name for t in tags] == tags  # engines are named after their subgraph
    again = hv.measure(part, xs, cache=cache, warmup=1, iters=5)
    assert again.cache_misses == 0 and again.outputs_match is True and again.compile_state["tensorrt"] == "cached"


@needs_trt_build
def test_tensorrt_tf32_lazy_engines_and_fallback(cuda_tiny_conv, monkeypatch):
    _, xs, gm = cuda_tiny_conv
    part = hv.partition(gm, priority=("tensorrt",), min_block_size=1)
    cache = CompileCache()
    lazy = hv.measure(part, xs, cache=cache, warmup=1, iters=5, trt_settings={"lazy_engine_init": True})
    assert lazy.outputs_match is True and not lazy.fallbacks
    tf32 = hv.measure(part, xs, cache=cache, warmup=1, iters=5, tf32=True)
    assert tf32.precision["tensorrt_disable_tf32"] is False and tf32.cache_misses > 0  # not the FP32 engines
    assert torch.get_float32_matmul_precision() == "highest"  # restored

    def broken(*args, **kwargs):
        raise RuntimeError("builder failed")

    monkeypatch.setattr(hv.trt, "compile_submodule", broken)
    m = hv.measure(part, xs, cache=CompileCache(), warmup=1, iters=5, on_error="fallback")
    fell = m.per_subgraph[m.per_subgraph.status == "fallback"]
    assert len(fell) == len(m.fallbacks) > 0 and set(fell.asked) == {"tensorrt"} and set(fell.backend) == {"torch"}
    assert "FELL BACK" in repr(m) and m.to_dict()["fallbacks"] == len(fell)


@needs_trt_build
def test_tensorrt_engines_from_the_disk_cache_and_clear_frees_memory(cuda_tiny_conv, tmp_path):
    _, xs, gm = cuda_tiny_conv
    part = hv.partition(gm, priority=("tensorrt",), min_block_size=1)
    cache = CompileCache()
    torch.cuda.synchronize()
    free_before = torch.cuda.mem_get_info()[0]  # device-wide: TensorRT allocates outside torch's allocator
    first = hv.measure(part, xs, cache=cache, cache_dir=tmp_path, warmup=1, iters=5)
    assert first.cache_misses > 0 and list(tmp_path.rglob("*.bin"))
    other = CompileCache()
    second = hv.measure(part, xs, cache=other, cache_dir=tmp_path, warmup=1, iters=5)
    assert second.cache_misses == 0 and second.outputs_match is True and second.compile_s == 0
    del first, second
    cache.clear()
    other.clear()
    torch.cuda.synchronize()
    assert torch.cuda.mem_get_info()[0] >= free_before - (64 << 20)


@needs_trt_build
def test_tensorrt_dynamic_batch_runs_other_sizes(cuda_tiny_conv):
    model, xs, _ = cuda_tiny_conv
    batch = torch.export.Dim("batch", min=1, max=8)
    x4 = xs[0].expand(4, -1, -1, -1).contiguous()
    gm = hv.capture(model, (x4,), dynamic_shapes=({0: batch},))
    part = hv.partition(gm, priority=("tensorrt",), min_block_size=1)
    split = hv.latency.compile_split(part, (x4,), cache=CompileCache())
    x8 = torch.randn(8, *x4.shape[1:], device="cuda")
    with torch.no_grad():
        out, want = split.module(x8), model(x8)
    assert out.shape == want.shape and torch.allclose(out, want, atol=1e-3, rtol=1e-3)


@needs_trt_build
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensorrt_builds_on_the_requested_gpu(tiny_conv):
    import copy

    model, x, _ = tiny_conv
    xs = tuple(t.to("cuda:1") for t in x)
    gm = hv.capture(copy.deepcopy(model).to("cuda:1"), xs)
    part = hv.partition(gm, priority=("tensorrt",), min_block_size=1)
    split = hv.latency.compile_split(part, xs, device="cuda:1", cache=CompileCache())
    engines = [r.fn for r in split.runners.values() if r.status == "compiled"]
    assert engines and all(e.settings.device.gpu_id == 1 for e in engines)
