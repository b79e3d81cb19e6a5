"""Importing Torch-TensorRT without a GPU, and whether it is there.

Torch-TensorRT queries the CUDA device while it is imported (`is_tegra_platform()` calls
`torch.cuda.get_device_capability()`; `CompilationSettings()` defaults call
`torch.cuda.current_device()`), so on a machine without an NVIDIA driver the import fails.
Its converter registry, lowering and partitioner do not need a GPU, so while the import runs
we answer those queries with neutral values and restore torch's own functions afterwards
(`answer_cuda_queries`). Nothing is changed when a real CUDA device is present.

Those answers stay inside the import and the settings' construction: capture runs the lowering
without them, and the decompositions that allocate on upstream's default device (cuda:0,
e.g. `empty_permuted` from an in-place dropout in train mode) allocate on the CPU instead
(`lowering_device`), so a CPU capture never meets a cuda:0 tensor. The import also turns on
`logging.captureWarnings` for the whole process; `warning_routing` puts it back.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import functools
import logging
import threading
import warnings
from typing import Any, Iterator

import torch

from hierviz.foundation import torch_output
from hierviz.errors import TensorRTUnavailableError

logger = logging.getLogger(__name__)

# The device queries upstream makes at import time, with the answers used without a GPU.
# (8, 0) is an ordinary data-centre GPU: not Tegra/Orin/Thor, so no platform special cases.
_CUDA_ANSWERS: dict[str, Any] = {
    "get_device_capability": lambda device=None: (8, 0),
    "current_device": lambda: 0,
}


FIX_DATACENTER = 'pip install "hierviz[tensorrt]"'  # standard TensorRT: every GPU from SM75 on


FIX_RTX = 'pip install "hierviz[tensorrt-rtx]"'  # TensorRT-RTX: GeForce/RTX GPUs, installs from PyPI


# answer_cuda_queries is entered from several threads (the explorer's worker runs jobs side by
# side): the first one in saves torch's functions and puts the answers in, the last one out puts
# torch's back, so an overlapping call never saves an answer as "torch's own"
_ANSWERING = threading.Lock()
_ANSWERED: dict[str, Any] = {}  # torch's own functions, while the answers are in
_DEPTH = [0]  # calls inside answer_cuda_queries now


@contextlib.contextmanager
def answer_cuda_queries() -> Iterator[None]:
    """Answer upstream's import-time CUDA queries when CUDA is not real; restore after (when the
    last of the threads inside it leaves)."""
    with _ANSWERING:
        real = not _DEPTH[0] and torch.cuda.is_available()
        if not real:
            if not _DEPTH[0]:
                _ANSWERED.update({name: getattr(torch.cuda, name) for name in _CUDA_ANSWERS})
                for name, fn in _CUDA_ANSWERS.items():
                    setattr(torch.cuda, name, fn)
            _DEPTH[0] += 1
    if real:
        yield
        return
    try:
        yield
    finally:
        with _ANSWERING:
            _DEPTH[0] -= 1
            if not _DEPTH[0]:
                for name, fn in _ANSWERED.items():
                    setattr(torch.cuda, name, fn)
                _ANSWERED.clear()


@contextlib.contextmanager
def warning_routing() -> Iterator[None]:
    """Keep the process's warning routing as it was: importing torch_tensorrt calls
    `logging.captureWarnings(True)`, which would send every later warning (hierviz's included)
    to the `py.warnings` logger, unseen by `warnings.catch_warnings(record=True)` and
    `pytest.warns`."""
    before = warnings.showwarning
    try:
        yield
    finally:
        if warnings.showwarning is not before:
            logging.captureWarnings(False)  # drops logging's hook (only if it was installed here)
            warnings.showwarning = before


@contextlib.contextmanager
def lowering_device() -> Iterator[None]:
    """While capture lowers without a GPU: upstream's decompositions that allocate on its
    default device (`empty_permuted`, `empty_strided`) allocate on the CPU; restored after."""
    if torch.cuda.is_available():
        yield
        return
    from torch_tensorrt.dynamo.lowering import _decompositions

    saved = _decompositions.default_device
    _decompositions.default_device = lambda: torch.device("cpu")
    try:
        yield
    finally:
        _decompositions.default_device = saved


# The Torch-TensorRT distributions, as their metadata names them, and their variant.
DISTRIBUTIONS = (("torch-tensorrt", "standard"), ("torch-tensorrt-rtx", "rtx"))


@functools.lru_cache(maxsize=1)
def installed_distribution() -> tuple[str, str] | None:
    """(name, version) of the installed Torch-TensorRT distribution ("torch-tensorrt" or
    "torch-tensorrt-rtx", as its metadata spells them), read from its metadata without importing
    it; None when neither is installed. The same install gives the same answer in every process."""
    for dist, _ in DISTRIBUTIONS:
        try:
            found = importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        return dist, str(found.version)
    return None


def installed_variant() -> tuple[str | None, str | None]:
    """(version, "standard" or "rtx") of the installed Torch-TensorRT distribution, or (None, None)."""
    found = installed_distribution()
    if found is None:
        return None, None
    return found[1], dict(DISTRIBUTIONS)[found[0]]


# The TensorRT library's distributions, as their metadata names them (TensorRT-RTX first).
LIBRARY_DISTRIBUTIONS = ("tensorrt_rtx", "tensorrt", "tensorrt_cu13", "tensorrt_cu12")


@functools.lru_cache(maxsize=1)
def library_version() -> str | None:
    """The installed TensorRT library's version (e.g. '1.6.1.120' for TensorRT-RTX), read from its
    metadata without importing it; None when no TensorRT library is installed."""
    for dist in LIBRARY_DISTRIBUTIONS:
        try:
            return str(importlib.metadata.version(dist))
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def present() -> bool:
    """torch_tensorrt is here, asked without importing it: it imported, or (its import not
    tried yet in this process) a Torch-TensorRT distribution is installed."""
    return available() if loaded() else installed_distribution() is not None


def loaded() -> bool:
    """Whether torch_tensorrt's import has been tried in this process (`load` has run)."""
    return bool(load.cache_info().currsize)


# One import at a time: two threads answering the CUDA queries at once would each save the
# other's answers as torch's own functions (and leave them in place), and two threads in a
# first import of torch_tensorrt (and the torch._dynamo/_inductor it pulls in) can deadlock.
_LOADING = threading.Lock()


@functools.lru_cache(maxsize=1)
def load() -> tuple[Any, str | None]:
    """(the torch_tensorrt module, None), or (None, why it does not import); imported once,
    by one thread at a time."""
    with _LOADING:
        return _import()


def _import() -> tuple[Any, str | None]:
    if importlib.util.find_spec("torch_tensorrt") is None:
        return None, "torch_tensorrt is not installed"
    try:
        # what the import prints on a machine without a GPU ("Unable to read CUDA capable
        # devices", modelopt's absence, torch's deprecation warnings) is held back: --verbose shows it
        with answer_cuda_queries(), warning_routing(), torch_output.held_back("import torch_tensorrt"), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module("torch_tensorrt")
            # submodules that also read the device when first imported
            importlib.import_module("torch_tensorrt.dynamo")
            importlib.import_module("torch_tensorrt.dynamo.lowering")
            importlib.import_module("torch_tensorrt.dynamo.conversion._ConverterRegistry")
    except Exception as exc:  # a probe of an optional package: reported to the user through info()
        logger.debug("import torch_tensorrt failed", exc_info=True)
        return None, f"import torch_tensorrt failed: {type(exc).__name__}: {exc}"
    return module, None


def tensorrt_library() -> Any:
    """The TensorRT library module (torch_tensorrt registers TensorRT-RTX under this name)."""
    require()
    import tensorrt

    return tensorrt


def available() -> bool:
    """torch_tensorrt imports (enough to partition; see `info().can_build` for compiling)."""
    return load()[0] is not None


def require() -> Any:
    """The torch_tensorrt module, or TensorRTUnavailableError saying how to get it."""
    module, error = load()
    if module is None:
        raise TensorRTUnavailableError(
            f"This needs Torch-TensorRT, but {error}. Install it with "
            f"`{FIX_DATACENTER}` (data-centre GPUs, NVIDIA's index) or "
            f"`{FIX_RTX}` (RTX GPUs, from PyPI; also partitions without a GPU)."
        )
    return module


def default_settings(**overrides: Any) -> Any:
    """A CompilationSettings, built without needing a GPU."""
    require()
    from torch_tensorrt.dynamo import CompilationSettings

    with answer_cuda_queries():
        return CompilationSettings(**overrides)


def lowering() -> Any:
    """torch_tensorrt.dynamo.lowering (its passes and decompositions)."""
    require()
    from torch_tensorrt.dynamo import lowering as lowering_module

    return lowering_module


__all__ = ["FIX_DATACENTER", "FIX_RTX", "answer_cuda_queries", "lowering_device", "installed_variant",
           "LIBRARY_DISTRIBUTIONS", "library_version", "installed_distribution", "present", "loaded", "DISTRIBUTIONS",
           "load", "tensorrt_library", "available", "require", "default_settings", "lowering"]
