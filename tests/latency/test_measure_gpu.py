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


def test_tensorrt_subgraphs_compile_and_match(tiny_conv):
    if not hv.trt.available():
        pytest.skip(f"torch_tensorrt is not importable: {hv.trt.info()}")
    model, x, _ = tiny_conv
    import copy

    cuda_model = copy.deepcopy(model).cuda()
    xs = tuple(t.cuda() for t in x)
    gm = hv.capture(cuda_model, xs)
    part = hv.partition(gm, min_block_size=1, torch_executed_ops={BN})
    assert any(sg.backend == "tensorrt" for sg in part.subgraphs)
    cache = CompileCache()
    m = hv.measure(part, xs, cache=cache, warmup=3, iters=20, trt_settings={"min_block_size": 1})
    assert m.outputs_match is True, m.warnings
    trt_rows = m.per_subgraph[m.per_subgraph.backend == "tensorrt"]
    assert set(trt_rows.status) <= {"compiled", "cached"} and (trt_rows.median_ms > 0).all()
    again = hv.measure(part, xs, cache=cache, warmup=1, iters=5, trt_settings={"min_block_size": 1})
    assert again.cache_misses == 0 and again.outputs_match is True
