"""hv.measure's failures: TensorRT without CUDA, failing compiles (with and without fallback),
missing compilers and bad arguments."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from _measure_helpers import BN, inductor_partition
from hierviz.latency import CompileCache, register_compiler, unregister_compiler

QUICK = dict(warmup=0, iters=1, per_subgraph=False)
CONV = "torch.ops.aten.convolution.default"


# without any GPU TensorRT is unavailable here; on a GPU machine, device="cpu" is the user's choice
NO_TRT_ON_CPU = hv.MeasureError if torch.cuda.is_available() else hv.TensorRTUnavailableError


def test_tensorrt_without_cuda_names_the_subgraphs(tiny_conv, inductor_compiles):
    _, x, gm = tiny_conv
    part = hv.partition(gm, min_block_size=1)  # the default: TensorRT first
    trt_tags = [sg.tag for sg in part.subgraphs if sg.backend == "tensorrt"]
    assert trt_tags
    with pytest.raises(NO_TRT_ON_CPU) as info:
        hv.measure(part, x, device="cpu", cache=CompileCache(), **QUICK)
    text = str(info.value)
    assert "TensorRT needs an NVIDIA GPU" in text
    assert all(tag in text for tag in trt_tags)
    assert 'priority=("inductor",), support={"inductor": hv.support.inductor()}' in text  # the way out, one that works


def test_tensorrt_check_comes_before_any_compile(tiny_conv, inductor_compiles):
    _, x, gm = tiny_conv
    # convolutions to inductor, everything else to TensorRT
    part = hv.partition(gm, priority=("inductor", "tensorrt"), min_block_size=1,
                        support={"inductor": hv.support.ops([CONV])})
    assert {sg.backend for sg in part.subgraphs} == {"inductor", "tensorrt"}
    with pytest.raises(NO_TRT_ON_CPU, match="TensorRT needs an NVIDIA GPU"):
        hv.measure(part, x, device="cpu", cache=CompileCache(), **QUICK)
    assert inductor_compiles.calls == 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without CUDA")
def test_default_device_without_cuda_is_cpu_and_cuda_is_refused(tiny_conv, shared_cache):
    _, x, gm = tiny_conv
    part = inductor_partition(gm, min_block_size=1, torch_executed_ops={BN})
    assert hv.measure(part, x, cache=shared_cache, **QUICK).device == "cpu"
    with pytest.raises(hv.MeasureError, match="no CUDA device"):
        hv.measure(part, x, device="cuda", cache=shared_cache, **QUICK)


def _boom(*args, **kwargs):
    raise RuntimeError("boom: no kernel for this op")


def test_failing_inductor_compile_raises_naming_the_subgraph(tiny_conv, monkeypatch):
    import torch._inductor

    _, x, gm = tiny_conv
    monkeypatch.setattr(torch._inductor, "compile", _boom)
    part = inductor_partition(gm, min_block_size=1, torch_executed_ops={BN})
    with pytest.raises(hv.MeasureError) as info:
        hv.measure(part, x, cache=CompileCache(), **QUICK)
    text = str(info.value)
    assert "_run_on_acc_inductor_0" in text and "inductor" in text
    assert "boom: no kernel for this op" in text and "on_error='fallback'" in text


def test_failing_compile_with_fallback_runs_eager_and_records_it(tiny_conv, monkeypatch):
    import torch._inductor

    _, x, gm = tiny_conv
    monkeypatch.setattr(torch._inductor, "compile", _boom)
    part = inductor_partition(gm, min_block_size=1, torch_executed_ops={BN})
    tags = [sg.tag for sg in part.subgraphs if sg.backend == "inductor"]
    m = hv.measure(part, x, cache=CompileCache(), on_error="fallback", warmup=0, iters=1)
    assert list(m.fallbacks) == tags
    table = m.per_subgraph.set_index("tag")
    assert (table.loc[tags, "status"] == "fallback").all()
    # what ran is eager PyTorch, not the backend that was asked for
    assert (table.loc[tags, "backend"] == "torch").all()
    assert (table.loc[tags, "asked"] == "inductor").all()
    assert table.loc[tags, "error"].str.contains("boom: no kernel").all()
    fell = [w for w in m.warnings if "boom: no kernel" in w]  # one note, each subgraph named once
    assert len(fell) == 1 and "fell back to eager PyTorch" in fell[0]
    assert all(fell[0].count(f"{tag} (") == 1 for tag in tags)
    assert m.outputs_match is True and m.max_abs_error == 0.0
    assert f"{len(tags)} FELL BACK to eager PyTorch ({len(tags)} inductor)" in repr(m)
    row = m.to_dict()
    assert row["fallbacks"] == len(tags) and row["fallback_tags"] == ",".join(tags)
    assert "subgraphs_inductor" not in row  # counts are of what ran
    assert row["subgraphs_torch"] == len(m.per_subgraph)
    assert [r.label for r in m.records if r.tag in tags] == ["inductor -> torch (fallback)"] * len(tags)


def test_custom_backend_with_failing_compiler(tiny_conv):
    _, x, gm = tiny_conv
    calls = []

    def flaky(g, inputs):
        calls.append(1)
        raise ValueError("flaky backend cannot take relu")

    register_compiler("flaky", flaky)
    try:
        part = hv.partition(gm, priority=("flaky",), min_block_size=1,
                            support={"flaky": hv.support.ops(["torch.ops.aten.relu.default"])})
        cache = CompileCache()
        with pytest.raises(hv.MeasureError, match="flaky backend cannot take relu") as info:
            hv.measure(part, x, cache=cache, **QUICK)
        assert "_run_on_acc_flaky_" in str(info.value)
        # remembered: the same subgraph is not compiled again, and falls back when asked
        m = hv.measure(part, x, cache=cache, on_error="fallback", **QUICK)
        # two relu subgraphs of different shapes: the first failure was remembered, the second
        # is tried once now
        assert len(calls) == 2
        assert len(m.fallbacks) == 2 and m.outputs_match is True
        assert sum("earlier compile" in w for w in m.warnings) == 1
    finally:
        unregister_compiler("flaky")


def test_backend_without_compiler(tiny_conv):
    _, x, gm = tiny_conv
    part = hv.partition(gm, priority=("mystery",), min_block_size=1,
                        support={"mystery": hv.support.ops([CONV])})
    with pytest.raises(hv.MeasureError, match="no compiler for backend 'mystery'.*register_compiler"):
        hv.measure(part, x, cache=CompileCache(), **QUICK)


def test_bad_arguments(tiny_conv, shared_cache):
    _, x, gm = tiny_conv
    part = inductor_partition(gm, min_block_size=1, torch_executed_ops={BN})
    with pytest.raises(hv.MeasureError, match="on_error"):
        hv.measure(part, x, on_error="ignore")
    with pytest.raises(hv.MeasureError, match="iters"):
        hv.measure(part, x, iters=0)
    with pytest.raises(hv.MeasureError, match="hv.Partition"):
        hv.measure(gm, x)
    with pytest.raises(hv.MeasureError, match="the graph takes 1"):
        hv.measure(part, (x[0], x[0]), cache=shared_cache, **QUICK)
    with pytest.raises(hv.MeasureError, match="not a device"):
        hv.measure(part, x, device="gpu0")


# ----------------------------------------------------------------------------- TensorRT unavailable



def test_tensorrt_unavailable_is_a_measure_error_that_names_the_fallback():
    assert issubclass(hv.TensorRTUnavailableError, hv.MeasureError)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without CUDA")
def test_tensorrt_unavailable_error_mentions_on_error_fallback(tiny_conv):
    _, x, gm = tiny_conv
    part = hv.partition(gm, min_block_size=1)
    with pytest.raises(hv.MeasureError) as info:  # an hv.MeasureError, as API.md promises
        hv.measure(part, x, cache=CompileCache(), **QUICK)
    assert type(info.value) is hv.TensorRTUnavailableError
    assert "on_error=\"fallback\"" in str(info.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without CUDA")
def test_fallback_covers_tensorrt_unavailable(tiny_conv, inductor_compiles):
    _, x, gm = tiny_conv
    # convolutions to inductor, the rest to TensorRT, which cannot build here
    part = hv.partition(gm, priority=("inductor", "tensorrt"), min_block_size=1,
                        support={"inductor": hv.support.ops([CONV])})
    trt_tags = [sg.tag for sg in part.subgraphs if sg.backend == "tensorrt"]
    ind_tags = [sg.tag for sg in part.subgraphs if sg.backend == "inductor"]
    assert trt_tags and ind_tags
    with pytest.warns(hv.latency.MeasureWarning, match="fell back to eager PyTorch.*TensorRT needs an NVIDIA GPU"):
        m = hv.measure(part, x, cache=CompileCache(), on_error="fallback", warmup=0, iters=1)
    assert list(m.fallbacks) == trt_tags and m.to_dict()["fallbacks"] == len(trt_tags)
    table = m.per_subgraph.set_index("tag")
    assert (table.loc[trt_tags, "status"] == "fallback").all()
    assert (table.loc[trt_tags, "backend"] == "torch").all()
    assert (table.loc[ind_tags, "status"] == "compiled").all()  # the rest is measured as asked
    assert inductor_compiles.calls == len(ind_tags)
    assert m.outputs_match is True
    assert f"{len(trt_tags)} FELL BACK to eager PyTorch ({len(trt_tags)} tensorrt)" in repr(m)
    compiled = part.compile(device="cpu", example_inputs=x, on_error="fallback", cache=CompileCache())
    assert tuple(compiled.fallbacks) == tuple(trt_tags)
    torch.testing.assert_close(compiled(*x), gm(*x))


@pytest.mark.parametrize("field, value", [("enabled_precisions", {torch.half}), ("use_python_runtime", True)])
@pytest.mark.parametrize("device", [None, "cuda"])
def test_bad_trt_settings_are_reported_before_the_device(tiny_conv, field, value, device):
    from hierviz import trt

    if not trt.available():
        pytest.skip("torch_tensorrt does not import here")
    _, x, gm = tiny_conv
    part = hv.partition(gm, min_block_size=1)  # TensorRT subgraphs: unbuildable without a GPU
    with pytest.raises(hv.ConfigError, match=f"trt_settings: '{field}' does not exist"):
        hv.measure(part, x, device=device, trt_settings={field: value}, cache=CompileCache(), **QUICK)
    with pytest.raises(hv.ConfigError, match=f"trt_settings: '{field}' does not exist"):
        part.compile(device=device, example_inputs=x, trt_settings={field: value})
