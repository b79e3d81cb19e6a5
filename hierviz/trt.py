"""The one place that imports torch_tensorrt.

Torch-TensorRT queries the CUDA device while it is imported (`is_tegra_platform()` calls
`torch.cuda.get_device_capability()`; `CompilationSettings()` defaults call
`torch.cuda.current_device()`), so on a machine without an NVIDIA driver the import fails.
Its converter registry, lowering and partitioner do not need a GPU, so while the import runs
we answer those queries with neutral values and restore torch's own functions afterwards.
Nothing is changed when a real CUDA device is present.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from hierviz.errors import TensorRTUnavailableError

# The device queries upstream makes at import time, with the answers used without a GPU.
# (8, 0) is an ordinary data-centre GPU: not Tegra/Orin/Thor, so no platform special cases.
_CUDA_ANSWERS: dict[str, Any] = {
    "get_device_capability": lambda device=None: (8, 0),
    "current_device": lambda: 0,
}


@contextlib.contextmanager
def _answer_cuda_queries() -> Iterator[None]:
    """Answer upstream's import-time CUDA queries when CUDA is not real; restore after."""
    if torch.cuda.is_available():
        yield
        return
    saved = {name: getattr(torch.cuda, name) for name in _CUDA_ANSWERS}
    try:
        for name, fn in _CUDA_ANSWERS.items():
            setattr(torch.cuda, name, fn)
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch.cuda, name, fn)


@dataclass(frozen=True)
class TRTInfo:
    """What hierviz found of Torch-TensorRT on this machine."""

    available: bool
    version: str | None
    variant: str | None  # "standard", "rtx" or None
    cuda: bool  # a real CUDA device is present
    error: str | None = None

    def __str__(self) -> str:
        if not self.available:
            return f"torch_tensorrt: not available ({self.error})"
        gpu = "CUDA device present" if self.cuda else "no CUDA device (CPU-only: partitioning works, TensorRT compile does not)"
        return f"torch_tensorrt {self.version} ({self.variant}); {gpu}"


def _installed_variant() -> tuple[str | None, str | None]:
    for dist, variant in (("torch-tensorrt", "standard"), ("torch_tensorrt", "standard"),
                          ("torch-tensorrt-rtx", "rtx"), ("torch_tensorrt_rtx", "rtx")):
        try:
            return importlib.metadata.version(dist), variant
        except importlib.metadata.PackageNotFoundError:
            continue
    return None, None


@functools.lru_cache(maxsize=1)
def _load() -> tuple[Any, str | None]:
    if importlib.util.find_spec("torch_tensorrt") is None:
        return None, "torch_tensorrt is not installed"
    try:
        with _answer_cuda_queries():
            module = importlib.import_module("torch_tensorrt")
            # submodules that also read the device when first imported
            importlib.import_module("torch_tensorrt.dynamo")
            importlib.import_module("torch_tensorrt.dynamo.lowering")
            importlib.import_module("torch_tensorrt.dynamo.conversion._ConverterRegistry")
    except Exception as exc:  # noqa: BLE001 - reported to the user through info()
        return None, f"import torch_tensorrt failed: {type(exc).__name__}: {exc}"
    return module, None


def info() -> TRTInfo:
    """Whether torch_tensorrt is usable here, its version, variant and whether CUDA is real."""
    module, error = _load()
    version, variant = _installed_variant()
    if module is not None:
        version = getattr(module, "__version__", version)
    return TRTInfo(available=module is not None, version=version, variant=variant,
                   cuda=torch.cuda.is_available(), error=error)


def available() -> bool:
    return _load()[0] is not None


def require() -> Any:
    """The torch_tensorrt module, or TensorRTUnavailableError saying how to get it."""
    module, error = _load()
    if module is None:
        raise TensorRTUnavailableError(
            f"This needs Torch-TensorRT, but {error}. Install it with "
            "`pip install hierviz[tensorrt]` (GPU machines with NVIDIA's index) or "
            "`pip install hierviz[tensorrt-rtx]` (from PyPI, works for partitioning without a GPU)."
        )
    return module


def converter_registry() -> Any:
    """Torch-TensorRT's DYNAMO_CONVERTERS registry."""
    require()
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS

    return DYNAMO_CONVERTERS


def converter_targets() -> list[Any]:
    """Every target the converter registry has a converter for."""
    return list(converter_registry().keys())


def default_settings(**overrides: Any) -> Any:
    """A CompilationSettings, built without needing a GPU."""
    require()
    from torch_tensorrt.dynamo import CompilationSettings

    with _answer_cuda_queries():
        return CompilationSettings(**overrides)


def lowering() -> Any:
    require()
    from torch_tensorrt.dynamo import lowering as lowering_module

    return lowering_module


def run_upstream_partitioner(gm: torch.fx.GraphModule, **kwargs: Any) -> tuple[Any, Any]:
    """Upstream's hierarchical_adjacency_partition (it mutates gm; pass a copy)."""
    require()
    from torch_tensorrt.dynamo.partitioning._hierarchical_partitioner import (
        hierarchical_adjacency_partition,
    )

    return hierarchical_adjacency_partition(gm, **kwargs)


def compilation_settings(settings: Any = None) -> Any:
    """A CompilationSettings from None (the defaults), a dict of its fields, or one as is."""
    require()
    from torch_tensorrt.dynamo import CompilationSettings

    if settings is None:
        return default_settings()
    if isinstance(settings, CompilationSettings):
        return settings
    if isinstance(settings, dict):
        known = {f.name for f in dataclasses.fields(CompilationSettings)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ValueError(f"unknown Torch-TensorRT CompilationSettings field(s) {unknown}; "
                             f"known fields include {sorted(known)[:12]} ...")
        return default_settings(**settings)
    raise TypeError(f"TensorRT settings must be a dict or a CompilationSettings, not "
                    f"{type(settings).__name__}")


def settings_key(settings: Any = None) -> tuple:
    """A hashable, process-independent description of TensorRT compilation settings."""
    if settings is None:
        return ("defaults",)
    if isinstance(settings, dict):
        return tuple(sorted((str(k), repr(v)) for k, v in settings.items()))
    if dataclasses.is_dataclass(settings):
        return tuple((f.name, repr(getattr(settings, f.name))) for f in dataclasses.fields(settings))
    return (type(settings).__name__, repr(settings))


def compile_submodule(gm: torch.fx.GraphModule, settings: Any = None, name: str = "") -> Any:
    """A TensorRT engine module for one subgraph, the way upstream's hierarchical partitioner
    example compiles a `_run_on_acc_tensorrt_*` submodule: `construct_submodule_inputs` (from
    the placeholders' `meta['val']`), then `convert_module`. Needs a CUDA device."""
    require()
    from torch_tensorrt.dynamo import partitioning
    from torch_tensorrt.dynamo.conversion import convert_module

    settings = compilation_settings(settings)
    inputs = partitioning.construct_submodule_inputs(gm)
    return convert_module(gm, inputs, settings=settings, name=name)
