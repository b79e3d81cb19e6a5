"""A built engine is kept with what Torch-TensorRT's runtime needs, under a key that hv.measure's
own rebuilt subgraph (weights gathered, its CompilationSettings) finds; on a GPU, hv.measure
loads it instead of building the engine again."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.building.engine_store import stored_engine
from hierviz.capturing.example_inputs import example_from_graph
from hierviz.latency.compiling.lift import bake, lift
from tests.building.models import ConvNet, made

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")


def _measured_form(part: hv.Partition, tag: str) -> torch.fx.GraphModule:
    """The subgraph as hv.measure hands it to the TensorRT compiler: lifted, then baked."""
    sub = getattr(part.module, tag)
    return bake(lift(sub, torch.device("cpu"), keep_meta=True), example_from_graph(sub))


def test_measure_finds_the_engine_build_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    tag = part.subgraphs[0].tag
    settings = trt.conversion_settings(None)
    assert stored_engine(_measured_form(part, tag), settings) is None  # nothing built yet
    builds = part.build()
    found = stored_engine(_measured_form(part, tag), settings)
    assert found is not None
    engine, runtime = found
    assert len(engine) == builds.df.engine_bytes[0]
    assert runtime["input_binding_names"] and runtime["output_binding_names"]
    # other settings are other engines
    assert stored_engine(_measured_form(part, tag), trt.conversion_settings({"optimization_level": 1})) is None
    assert stored_engine(_measured_form(part, tag), trt.conversion_settings(None, tf32=True)) is None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_measure_loads_the_built_engine(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    model, x = made(ConvNet, 1, 3, 16, 16)
    part = hv.partition(model, x, min_block_size=1)
    assert part.build().ok
    built = []
    monkeypatch.setattr(trt, "compile_submodule", lambda *a, **k: built.append(a) or pytest.fail("built again"))
    from hierviz.latency import CompileCache

    m = hv.measure(part, x, cache=CompileCache(), warmup=2, iters=5)
    assert m.outputs_match and not built and not m.fallbacks
