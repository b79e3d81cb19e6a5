"""Failures that are not the model's: bad settings, out of memory, hierviz's own errors. They
raise (ConfigError before anything converts, hv.BuildError after), are never stored in the
build cache, and never start a fix search."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.building.engine_store import EngineStore
from tests.building.models import ConvNet, made

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")


@pytest.fixture
def calls(monkeypatch, tmp_path):
    """Every convert_and_build call, counted; the build cache in a folder of the test's."""
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    seen: list[str] = []
    real = trt.convert_and_build

    def counted(gm, settings=None, **options):
        seen.append(type(gm).__name__)
        return real(gm, settings, **options)

    monkeypatch.setattr(trt, "convert_and_build", counted)
    return seen


@pytest.mark.parametrize(("settings", "said"), [
    ({"optimization_level": "high"}, "optimization_level"),
    ({"optimization_level": 99}, "optimization_level"),
    ({"workspace_size": -5}, "workspace_size"),
])
def test_bad_settings_are_refused_before_anything_converts(calls, settings, said):
    model, x = made(ConvNet, 1, 3, 8, 8)
    part = hv.partition(model, x, min_block_size=1)
    with pytest.raises(hv.ConfigError) as caught:
        part.build(trt_settings=settings)
    assert said in str(caught.value) and repr(settings[said]) in str(caught.value)
    assert calls == []
    assert EngineStore().builds() == []


def test_out_of_memory_in_the_builder_is_a_build_error_never_stored_nor_fixed(calls, monkeypatch):
    model, x = made(ConvNet, 1, 3, 8, 8)
    part = hv.partition(model, x, min_block_size=1)
    real_build = trt.convert_and_build

    def no_memory(gm, settings=None, **options):
        calls.append("oom")
        raise hv.BuildError("out of memory while TensorRT built the engine")

    monkeypatch.setattr(trt, "convert_and_build", no_memory)
    with pytest.raises(hv.BuildError, match="out of memory"):
        part.build()
    assert calls == ["oom"]  # one build, no fix search after it
    assert EngineStore().builds() == []
    monkeypatch.setattr(trt, "convert_and_build", real_build)
    again = part.build()
    assert again.ok and list(again.df["cached"]) == [False]


def test_out_of_memory_while_the_graph_runs_is_a_build_error_not_a_run_failure(calls):
    model, x = made(ConvNet, 1, 3, 8, 8)
    part = hv.partition(model, x, min_block_size=1)

    def short_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CPU out of memory. Tried to allocate 2.00 GiB")

    # the kernel of the graph's relu runs out of memory, whichever way the graph is run
    with torch.library._scoped_library("aten", "IMPL") as kernels, pytest.raises(hv.BuildError) as caught:
        kernels.impl("relu", short_of_memory, "CPU")
        part.build()
    message = str(caught.value)
    relu = next(n.name for n in part.graph.graph.nodes if n.target is torch.ops.aten.relu.default)
    assert message.startswith("part.build(): out of memory while running the lowered graph in PyTorch at node "
                              f"{relu} (OutOfMemoryError: CPU out of memory. Tried to allocate 2.00 GiB)")
    assert "nothing was stored" in message
    assert calls == ["GraphModule"]  # the graph runs beside the engine's build: one build, no fix search
    assert EngineStore().builds() == [] and not any(EngineStore().folder.glob("*.engine"))
    assert not any(EngineStore().folder.glob("run-*.json"))
