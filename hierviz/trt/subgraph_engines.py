"""TensorRT engines for subgraphs: their inputs, building one (`compile_submodule`), saving and
loading it, and whether earlier builds left TensorRT's caches warm. Needs a CUDA GPU to build.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import torch

from hierviz.trt.engine_metadata import check_engine_state
from hierviz.trt.loading import require
from hierviz.trt.registry_lock import registry_held
from hierviz.trt.compilation_settings import conversion_settings

def submodule_inputs(gm: torch.fx.GraphModule) -> list[Any]:
    """torch_tensorrt.Input per placeholder from its `meta['val']` (upstream's
    construct_submodule_inputs): dynamic (min/opt/max from the symbols' ranges) where the
    recorded shape is symbolic, static otherwise."""
    require()
    from torch_tensorrt.dynamo import partitioning

    return list(partitioning.construct_submodule_inputs(gm))


def is_dynamic(inp: Any) -> bool:
    """Whether a torch_tensorrt.Input has a min/opt/max shape range."""
    return getattr(getattr(inp, "shape_mode", None), "name", "") == "DYNAMIC"


def compile_submodule(gm: torch.fx.GraphModule, settings: Any = None, name: str = "") -> Any:
    """A TensorRT engine module for one subgraph, as upstream's hierarchical partitioner example
    compiles a `_run_on_acc_tensorrt_*` submodule: inputs from the placeholders' `meta['val']`,
    then `convert_module`, named `name` (engines show as '<name>_engine' in logs and profiles).
    `settings`: a CompilationSettings (see conversion_settings) or None. Needs a CUDA GPU."""
    require()
    from torch_tensorrt.dynamo import CompilationSettings
    from torch_tensorrt.dynamo.conversion import convert_module

    if not isinstance(settings, CompilationSettings):
        settings = conversion_settings(settings)
    inputs = submodule_inputs(gm)
    on_gpu = torch.cuda.device(settings.device.gpu_id) if torch.cuda.is_available() else contextlib.nullcontext()
    with registry_held(), on_gpu:  # converting sets the registry's settings: never beside a validation
        module = convert_module(gm, inputs, settings=settings, name=name)
        if getattr(module, "engine", None) is None:  # lazy_engine_init: upstream calls this after conversion
            module.setup_engine()
    return module


def engine_module(engine: bytes, runtime: dict, settings: Any = None, name: str = "") -> Any:
    """The TorchTensorRTModule of an engine built before (hierviz.trt.convert_and_build, kept by
    the build cache): what `convert_module` returns, without converting or building again.
    `runtime`: the binding names and flags recorded at its build. Needs a CUDA GPU."""
    require()
    from torch_tensorrt.dynamo import CompilationSettings
    from torch_tensorrt.dynamo.runtime import TorchTensorRTModule

    if not isinstance(settings, CompilationSettings):
        settings = conversion_settings(settings)
    on_gpu = torch.cuda.device(settings.device.gpu_id) if torch.cuda.is_available() else contextlib.nullcontext()
    with on_gpu:
        module = TorchTensorRTModule(serialized_engine=engine, name=name, settings=settings, **runtime)
        if getattr(module, "engine", None) is None:
            module.setup_engine()
    return module


def save_engine(module: Any, path: str | Path) -> None:
    """Write a TorchTensorRTModule through its documented state (state_dict, whose extra state
    is the serialized engine, its bindings and settings)."""
    torch.save({"format": "hierviz-tensorrt-v1", "state": module.state_dict()}, str(path))


def load_engine(path: str | Path) -> Any:
    """A TorchTensorRTModule read back from `save_engine`'s file (needs a CUDA GPU). Nothing in
    the file runs: it is read as tensors and plain data, and the settings Torch-TensorRT pickled
    into the engine's state are checked before it unpickles them (engine_metadata.py);
    pickle.UnpicklingError for a file that holds anything else."""
    require()
    from torch_tensorrt.dynamo.runtime import TorchTensorRTModule
    from torch_tensorrt.dynamo.runtime import _TorchTensorRTModule as upstream

    data = torch.load(str(path), weights_only=True, map_location="cpu")
    if not isinstance(data, dict) or data.get("format") != "hierviz-tensorrt-v1":
        raise ValueError(f"{path} is not a hierviz TensorRT engine file")
    check_engine_state(data.get("state"), upstream.SERIALIZED_METADATA_IDX)
    module = TorchTensorRTModule()
    module.load_state_dict(data["state"])
    return module


def build_caches() -> list[Path]:
    """Files that make a TensorRT build warm when present: the timing cache (standard TensorRT)
    and TensorRT-RTX's runtime cache."""
    require()
    from torch_tensorrt.dynamo import _defaults

    paths = [getattr(_defaults, "TIMING_CACHE_PATH", None), getattr(_defaults, "RUNTIME_CACHE_PATH", None)]
    return [Path(p) for p in paths if p]


def build_state() -> str:
    """'warm' when a TensorRT timing or runtime cache from earlier builds exists, else 'cold'."""
    return "warm" if any(p.exists() for p in build_caches()) else "cold"


__all__ = ["submodule_inputs", "is_dynamic", "compile_submodule", "engine_module", "save_engine", "load_engine",
           "build_caches", "build_state"]
