"""One key for one engine: settings are keyed by their effective values (defaults dropped, equal
values in one form), the same for part.build()'s dict and hv.measure's CompilationSettings, so
hv.measure finds the engine part.build() kept with the same settings."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.building.build_keys import build_key
from hierviz.building.engine_store import stored_engine
from hierviz.capturing.example_inputs import example_from_graph
from hierviz.latency.compiling.lift import bake, lift
from hierviz.trt.compilation_settings import conversion_fields
from tests.building.models import ConvNet, made

needs_trt = pytest.mark.skipif(not trt.available(), reason=f"torch_tensorrt unusable: {trt.info().error}")
needs_rtx = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                               reason="needs TensorRT-RTX, which builds engines on the CPU")


@pytest.mark.parametrize("same", [
    {}, {"workspace_size": 0}, {"optimization_level": 3}, {"optimization_level": None}, {"max_aux_streams": None},
    {"engine_capability": "STANDARD"}, {"engine_capability": "standard"}, {"immutable_weights": True},
    {"device": "cuda:0"}, {"l2_limit_for_tiling": -1}, {"tiling_optimization_level": "none"},
])
def test_a_default_value_keys_as_no_value(same) -> None:
    assert conversion_fields(same) == conversion_fields(None) == ({}, False)


def test_equal_values_key_alike_and_other_values_apart() -> None:
    assert conversion_fields({"workspace_size": 1 << 28}) == ({"workspace_size": 1 << 28}, False)
    assert conversion_fields({"engine_capability": "safety"}) == conversion_fields({"engine_capability": "SAFETY"})
    assert conversion_fields({"optimization_level": 5}) != conversion_fields({"optimization_level": 4})
    assert conversion_fields({"immutable_weights": False}) != conversion_fields({})


@needs_trt
@pytest.mark.parametrize("given", [
    {}, {"optimization_level": 5}, {"workspace_size": 1 << 28, "optimization_level": 1},
    {"engine_capability": "safety"}, {"sparse_weights": True, "workspace_size": 0},
])
def test_a_dict_keys_as_the_compilation_settings_made_of_it(given) -> None:
    from torch_tensorrt import EngineCapability

    assert conversion_fields(given) == conversion_fields(trt.conversion_settings(given))
    assert conversion_fields(trt.conversion_settings({"engine_capability": EngineCapability.SAFETY})) == \
        conversion_fields({"engine_capability": "SAFETY"})
    assert conversion_fields(trt.conversion_settings({}, tf32=True)) == ({}, True)


@needs_trt
def test_build_key_is_one_for_the_default_settings_in_every_form() -> None:
    part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    gm = getattr(part.module, part.subgraphs[0].tag)
    keys = {build_key(gm, s) for s in ({}, None, {"workspace_size": 0}, trt.conversion_settings({}))}
    assert len(keys) == 1
    assert build_key(gm, {"optimization_level": 1}) == build_key(gm, trt.conversion_settings({"optimization_level": 1}))
    assert build_key(gm, {"optimization_level": 1}) not in keys


@needs_rtx
def test_measure_finds_the_engine_build_kept_with_the_same_settings(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    tag = part.subgraphs[0].tag
    sub = getattr(part.module, tag)
    measured = bake(lift(sub, torch.device("cpu"), keep_meta=True), example_from_graph(sub))
    given = {"optimization_level": 1, "workspace_size": 0}
    builds = part.build(trt_settings=given)
    found = stored_engine(measured, trt.conversion_settings(given))
    assert found is not None and len(found[0]) == builds.df.engine_bytes[0]
    again = part.build(trt_settings={"optimization_level": 1})  # the same engine: from the cache
    assert again.df["cached"].tolist() == [True]
