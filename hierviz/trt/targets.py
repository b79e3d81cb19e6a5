"""Whether this machine's TensorRT can build engines for its GPU, and why not.

Importable (`available()`, enough for partitioning) is not the same as able to build engines
(`info().can_build`): that needs a CUDA GPU whose compute capability the installed TensorRT
builds for. TensorRT-RTX (`torch-tensorrt-rtx`, what `make setup` installs from PyPI) lists its
targets in `tensorrt.ComputeCapability` and has no SM90 (H100/H200) or SM100 (B200): data-centre
GPUs need the standard package, `pip install "hierviz[tensorrt]"`. `build_verdict` is the pure
decision; `info` gathers its inputs from the machine.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import logging
import re
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from hierviz.errors import WITHOUT_TENSORRT, ConfigError, TensorRTUnavailableError
from hierviz.trt.loading import FIX_DATACENTER, FIX_RTX, installed_variant, load, tensorrt_library

logger = logging.getLogger(__name__)

# Standard TensorRT 10 builds for Turing (SM75) and newer; it has no ComputeCapability table.
STANDARD_MIN_CAPABILITY = (7, 5)


@dataclass(frozen=True)
class TRTInfo:
    """What hierviz found of Torch-TensorRT on this machine, and whether it can build engines.

    `available`: torch_tensorrt imports (partitioning works). `can_build`: engines can be built
    for `gpu` here; `reason` says why not, with the fix. `tensorrt_version` is the TensorRT
    library's (for RTX, TensorRT-RTX's) version; `capability` the GPU's (major, minor);
    `targets` the capabilities this TensorRT lists as build targets (None: not listed).
    """

    available: bool
    version: str | None
    variant: str | None  # "standard", "rtx" or None
    cuda: bool  # a real CUDA device is present
    error: str | None = None
    tensorrt_version: str | None = None
    gpu: str | None = None
    capability: tuple[int, int] | None = None
    targets: tuple[tuple[int, int], ...] | None = None
    can_build: bool = False
    reason: str | None = None
    checked: bool = True  # torch_tensorrt was imported (False: versions read from the packages)

    def __str__(self) -> str:
        if not self.available:
            return f"torch_tensorrt: not available ({self.error})"
        text = f"torch_tensorrt {self.version} ({self.variant}, TensorRT {self.tensorrt_version})"
        if not self.checked:
            text += " installed (its import not tried: hierviz info --check)"
        if not self.cuda:
            return text + "; no CUDA device (CPU-only: partitioning works, TensorRT compile does not)"
        gpu = f"{self.gpu} (SM{sm(self.capability)})" if self.capability else str(self.gpu)
        verdict = "can build engines" if self.can_build else f"cannot build engines: {self.reason}"
        return f"{text}; GPU {gpu}; {verdict}"

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "summary": str(self)}


def sm(capability: Sequence[int] | None) -> str:
    """(9, 0) -> '90', (12, 1) -> '121'."""
    return "?" if capability is None else f"{capability[0]}{capability[1]}"


def _tensorrt_alone(variant: str | None) -> Any:
    """The TensorRT library imported by itself (0.1 s, where torch_tensorrt takes 5 s), or None."""
    for name in (("tensorrt_rtx", "tensorrt") if variant == "rtx" else ("tensorrt",)):
        try:
            if importlib.util.find_spec(name) is not None:
                return importlib.import_module(name)
        except Exception:  # a probe of an optional package: a broken install reports no library version
            logger.debug("import %s failed", name, exc_info=True)
            continue
    return None


def build_targets(library: Any = None) -> tuple[tuple[int, int], ...] | None:
    """The compute capabilities the installed TensorRT lists as build targets
    (`tensorrt.ComputeCapability`, e.g. SM75 ... SM121 for TensorRT-RTX); None when it lists none
    (standard TensorRT builds for its whole support range)."""
    table = getattr(library if library is not None else tensorrt_library(), "ComputeCapability", None)
    if table is None:
        return None
    found = []
    for name in getattr(table, "__members__", {}):
        match = re.fullmatch(r"SM(\d+)(\d)", name)
        if match:
            found.append((int(match.group(1)), int(match.group(2))))
    return tuple(sorted(found)) or None


def build_verdict(variant: str | None, capability: tuple[int, int] | None,
                  targets: Sequence[tuple[int, int]] | None, *, gpu: str | None = None,
                  version: str | None = None) -> str | None:
    """None when this TensorRT can build engines for a GPU of `capability`, else why not and
    what to do. A pure decision: `targets` is the build-target table (see build_targets)."""
    if capability is None:
        return ("no CUDA device here: TensorRT engines need an NVIDIA GPU. Measure on a GPU machine "
                f"(device='cuda'), or partition without TensorRT: {WITHOUT_TENSORRT}")
    capability = (int(capability[0]), int(capability[1]))
    name = "TensorRT-RTX" if variant == "rtx" else "TensorRT"
    where = f"this GPU ({gpu + ', ' if gpu else ''}SM{sm(capability)})"
    if targets is not None:
        if capability in {tuple(t) for t in targets}:
            return None
        listed = ", ".join(f"SM{sm(t)}" for t in targets)
        fix = (f"install the standard TensorRT, which builds for every GPU from SM75 on (H100, H200, B200, ...): "
               f"pip uninstall torch-tensorrt-rtx tensorrt-rtx, then {FIX_DATACENTER}"
               if variant == "rtx" else f"install a TensorRT that supports SM{sm(capability)}")
        return f"{name} {version or ''} builds only for {listed}, not for {where}; {fix}".replace("  ", " ")
    if capability < STANDARD_MIN_CAPABILITY:
        return (f"{name} {version or ''} builds for SM{sm(STANDARD_MIN_CAPABILITY)} and newer, not for "
                f"{where}; use a newer GPU").replace("  ", " ")
    return None


def info(device: Any = None, *, imports: bool = True) -> TRTInfo:
    """Whether torch_tensorrt imports, its versions and variant, the GPU (`device`, the current
    one by default) and whether TensorRT can build engines for it, with the reason if not.
    `imports=False` does not import torch_tensorrt (5 s without a GPU): it reads the installed
    versions and TensorRT's build targets from the packages alone (`checked` is False)."""
    version, variant = installed_variant()
    cuda = torch.cuda.is_available()
    if imports or load.cache_info().currsize:
        module, error = load()
        library = tensorrt_library() if module is not None else None
    else:
        installed = importlib.util.find_spec("torch_tensorrt") is not None
        module, error = (True if installed else None), (None if installed else "torch_tensorrt is not installed")
        library = _tensorrt_alone(variant) if installed else None
    if module is None:
        return TRTInfo(available=False, version=version, variant=variant, cuda=cuda, error=error,
                       reason=f"{error}; install it with {FIX_DATACENTER} (data-centre GPUs) or {FIX_RTX} (RTX)")
    version = getattr(module, "__version__", version)
    lib = getattr(library, "__version__", None)
    targets = build_targets(library) if library is not None else None
    gpu = capability = None
    if cuda:
        index = cuda_index(device)
        gpu = torch.cuda.get_device_name(index)
        capability = torch.cuda.get_device_capability(index)
    reason = build_verdict(variant, capability, targets, gpu=gpu, version=lib)
    return TRTInfo(available=True, version=version, variant=variant, cuda=cuda, tensorrt_version=lib,
                   gpu=gpu, capability=capability, targets=targets, can_build=reason is None, reason=reason,
                   checked=module is not True)


def require_build(device: Any = None) -> TRTInfo:
    """The TRTInfo when TensorRT can build engines for `device`, else TensorRTUnavailableError
    with the reason and the fix."""
    found = info(device)
    if not found.can_build:
        raise TensorRTUnavailableError(f"TensorRT cannot build engines here: {found.reason}. ({found})")
    return found


def cuda_index(device: Any = None) -> int:
    """The CUDA device index of `device` (None, an int, 'cuda', 'cuda:1', a torch.device or a
    torch_tensorrt.Device); ConfigError for anything else."""
    if device is None:
        return torch.cuda.current_device() if torch.cuda.is_available() else 0
    if isinstance(device, bool):
        raise ConfigError(f"device={device!r} is not a CUDA device; use 'cuda' or 'cuda:N'")
    if isinstance(device, int):
        return device
    gpu_id = getattr(device, "gpu_id", None)  # torch_tensorrt.Device
    if isinstance(gpu_id, int) and not isinstance(device, (str, torch.device)):
        return max(gpu_id, 0)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ConfigError(f"device={device!r} is not a CUDA device; use 'cuda' or 'cuda:N'") from None
    if dev.type != "cuda":
        raise ConfigError(f"TensorRT builds for CUDA devices, not {str(dev)!r}; use 'cuda' or 'cuda:N'")
    if dev.index is not None:
        return dev.index
    return torch.cuda.current_device() if torch.cuda.is_available() else 0


__all__ = ["STANDARD_MIN_CAPABILITY", "TRTInfo", "sm", "build_targets", "build_verdict", "info", "require_build",
           "cuda_index"]
