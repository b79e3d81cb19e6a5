"""The one place that imports torch_tensorrt: import without a GPU, availability with a reason,
conversion settings, engine building, saving and loading.

Torch-TensorRT queries the CUDA device while it is imported (`is_tegra_platform()` calls
`torch.cuda.get_device_capability()`; `CompilationSettings()` defaults call
`torch.cuda.current_device()`), so on a machine without an NVIDIA driver the import fails.
Its converter registry, lowering and partitioner do not need a GPU, so while the import runs
we answer those queries with neutral values and restore torch's own functions afterwards.
Nothing is changed when a real CUDA device is present.

Importable (`available()`, enough for partitioning) is not the same as able to build engines
(`info().can_build`): that needs a CUDA GPU whose compute capability the installed TensorRT
builds for. TensorRT-RTX (`torch-tensorrt-rtx`, what `make setup` installs from PyPI) lists its
targets in `tensorrt.ComputeCapability` and has no SM90 (H100/H200) or SM100 (B200): data-centre
GPUs need the standard package, `pip install "hierviz[tensorrt]"`.

Longer than ~400 lines on purpose: it is the single boundary to torch_tensorrt, so everything
that touches its API (import, availability, settings, engines, their files) stays in one place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from hierviz.errors import ConfigError, TensorRTUnavailableError

# The device queries upstream makes at import time, with the answers used without a GPU.
# (8, 0) is an ordinary data-centre GPU: not Tegra/Orin/Thor, so no platform special cases.
_CUDA_ANSWERS: dict[str, Any] = {
    "get_device_capability": lambda device=None: (8, 0),
    "current_device": lambda: 0,
}

FIX_DATACENTER = 'pip install "hierviz[tensorrt]"'  # standard TensorRT: every GPU from SM75 on
FIX_RTX = 'pip install "hierviz[tensorrt-rtx]"'  # TensorRT-RTX: GeForce/RTX GPUs, installs from PyPI
# Standard TensorRT 10 builds for Turing (SM75) and newer; it has no ComputeCapability table.
STANDARD_MIN_CAPABILITY = (7, 5)


@contextlib.contextmanager
def answer_cuda_queries() -> Iterator[None]:
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

    def __str__(self) -> str:
        if not self.available:
            return f"torch_tensorrt: not available ({self.error})"
        text = f"torch_tensorrt {self.version} ({self.variant}, TensorRT {self.tensorrt_version})"
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
        with answer_cuda_queries():
            module = importlib.import_module("torch_tensorrt")
            # submodules that also read the device when first imported
            importlib.import_module("torch_tensorrt.dynamo")
            importlib.import_module("torch_tensorrt.dynamo.lowering")
            importlib.import_module("torch_tensorrt.dynamo.conversion._ConverterRegistry")
    except Exception as exc:  # noqa: BLE001 - reported to the user through info()
        return None, f"import torch_tensorrt failed: {type(exc).__name__}: {exc}"
    return module, None


def _tensorrt() -> Any:
    """The TensorRT library module (torch_tensorrt registers TensorRT-RTX under this name)."""
    require()
    import tensorrt

    return tensorrt


def build_targets() -> tuple[tuple[int, int], ...] | None:
    """The compute capabilities the installed TensorRT lists as build targets
    (`tensorrt.ComputeCapability`, e.g. SM75 ... SM121 for TensorRT-RTX); None when it lists none
    (standard TensorRT builds for its whole support range)."""
    table = getattr(_tensorrt(), "ComputeCapability", None)
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
                "(device='cuda'), or partition without TensorRT, e.g. priority=('inductor',)")
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


def info(device: Any = None) -> TRTInfo:
    """Whether torch_tensorrt imports, its versions and variant, the GPU (`device`, the current
    one by default) and whether TensorRT can build engines for it, with the reason if not."""
    module, error = _load()
    version, variant = _installed_variant()
    cuda = torch.cuda.is_available()
    if module is None:
        return TRTInfo(available=False, version=version, variant=variant, cuda=cuda, error=error,
                       reason=f"{error}; install it with {FIX_DATACENTER} (data-centre GPUs) or {FIX_RTX} (RTX)")
    version = getattr(module, "__version__", version)
    lib = getattr(_tensorrt(), "__version__", None)
    targets = build_targets()
    gpu = capability = None
    if cuda:
        index = cuda_index(device)
        gpu = torch.cuda.get_device_name(index)
        capability = tuple(torch.cuda.get_device_capability(index))
    reason = build_verdict(variant, capability, targets, gpu=gpu, version=lib)
    return TRTInfo(available=True, version=version, variant=variant, cuda=cuda, tensorrt_version=lib,
                   gpu=gpu, capability=capability, targets=targets, can_build=reason is None, reason=reason)


def available() -> bool:
    """torch_tensorrt imports (enough to partition; see `info().can_build` for compiling)."""
    return _load()[0] is not None


def require() -> Any:
    """The torch_tensorrt module, or TensorRTUnavailableError saying how to get it."""
    module, error = _load()
    if module is None:
        raise TensorRTUnavailableError(
            f"This needs Torch-TensorRT, but {error}. Install it with "
            f"`{FIX_DATACENTER}` (data-centre GPUs, NVIDIA's index) or "
            f"`{FIX_RTX}` (RTX GPUs, from PyPI; also partitions without a GPU)."
        )
    return module


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


def converter_registry() -> Any:
    """Torch-TensorRT's DYNAMO_CONVERTERS registry."""
    require()
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS

    return DYNAMO_CONVERTERS


def converter_targets() -> list[Any]:
    """Every target the converter registry has a converter for."""
    return list(converter_registry().keys())


@contextlib.contextmanager
def validating() -> Iterator[Any]:
    """The converter registry, ready to run capability validators on many nodes (`node in
    registry`, as torch_tensorrt.compile's partitioners ask): the registry's invariants are
    checked once (not on every lookup, which costs ~0.6 ms a node), its compilation settings
    are the defaults with no torch_executed_ops (a compile run earlier in this process may
    have left its own) and the CUDA queries are answered. Everything is restored after;
    re-entrant, and one thread at a time."""
    registry = converter_registry()
    with _VALIDATING:
        if _VALIDATING_DEPTH[0]:
            _VALIDATING_DEPTH[0] += 1
            try:
                yield registry
            finally:
                _VALIDATING_DEPTH[0] -= 1
            return
        registry.validate_invariants()
        saved = registry.compilation_settings, registry.disallowed_targets
        with answer_cuda_queries():
            registry.compilation_settings = _validation_settings()
            registry.disallowed_targets = set()
            registry.validate_invariants = _no_check  # an instance attribute shadows the method
            _VALIDATING_DEPTH[0] = 1
            try:
                yield registry
            finally:
                _VALIDATING_DEPTH[0] = 0
                del registry.validate_invariants
                registry.compilation_settings, registry.disallowed_targets = saved


_VALIDATING = threading.RLock()
_VALIDATING_DEPTH = [0]


def _no_check() -> None:
    return None


@functools.lru_cache(maxsize=1)
def _validation_settings() -> Any:
    return default_settings()


def default_settings(**overrides: Any) -> Any:
    """A CompilationSettings, built without needing a GPU."""
    require()
    from torch_tensorrt.dynamo import CompilationSettings

    with answer_cuda_queries():
        return CompilationSettings(**overrides)


def lowering() -> Any:
    require()
    from torch_tensorrt.dynamo import lowering as lowering_module

    return lowering_module


def run_upstream_partitioner(gm: torch.fx.GraphModule, before_demotion: list | None = None,
                             **kwargs: Any) -> tuple[Any, Any]:
    """Upstream's hierarchical_adjacency_partition (it mutates gm; pass a copy).

    `before_demotion`, a list, receives upstream's subgraphs before its small-block pass, as
    (is_acc, backend, [node names]). Upstream's internal errors (FxNetSplitterInternalError)
    become a ConfigError."""
    require()
    from torch_tensorrt.dynamo.partitioning import _hierarchical_partitioner as hp

    cls = hp.HierarchicalAdjacencyPartitioner
    original = cls.remove_small_acc_subgraphs

    def recording(self: Any, subgraphs: list) -> list:
        before_demotion.extend((s.is_acc, s.backend, [n.name for n in s.nodes]) for s in subgraphs)
        return original(self, subgraphs)

    if before_demotion is not None:
        cls.remove_small_acc_subgraphs = recording
    try:
        return hp.hierarchical_adjacency_partition(gm, **kwargs)
    except hp.FxNetSplitterInternalError as exc:
        raise ConfigError(f"upstream's partitioner failed internally (FxNetSplitterInternalError: {exc}); "
                          "engine='hierviz' partitions this graph.") from exc
    finally:
        cls.remove_small_acc_subgraphs = original


@dataclass
class CompilePartition:
    """What torch_tensorrt.compile's partitioning step made of a graph (see
    run_compile_partitioner). `acc` and `torch` hold node names per block; `before_demotion`
    the fast partitioner's blocks before its small-block pass, as (is_acc, [names]);
    `supported` the names its operator support accepted; `fell_back` the fast partitioner's
    error when compile retried with the global one; `early_return` the supported-op count
    when compile skipped partitioning (fewer than min_block_size)."""

    partitioner: str  # "fast" or "global": the one whose result this is
    acc: list[list[str]]
    torch: list[list[str]]
    before_demotion: list[tuple[bool, list[str]]]
    supported: set[str]
    removed: set[str]  # removed by the fast partitioner's dead-code elimination
    num_supported_ops: int
    total_ops: int
    fell_back: str | None = None
    early_return: int | None = None


def run_compile_partitioner(gm: torch.fx.GraphModule, *, fast: bool, min_block_size: int,
                            torch_executed_ops: set[str], require_full_compilation: bool) -> CompilePartition:
    """The partitioning step of torch_tensorrt.compile (dynamo/_compiler.py, compile_module), run
    on `gm` (which it modifies: pass a copy) with the installed Torch-TensorRT's own
    partitioners and compile's rules: its CompilationSettings set on the converter registry;
    the whole graph left in PyTorch when it has no supported op or fewer than min_block_size
    (compile's early return outside dryrun); `fast_partition` with skip_fusion when every op is
    supported, retried with `global_partition` on FxNetSplitterInternalError; `global_partition`
    when not `fast`. Upstream's AssertionError for require_full_compilation is a ConfigError."""
    require()
    from torch.fx.passes.splitter_base import FxNetSplitterInternalError
    from torch_tensorrt.dynamo import partitioning
    from torch_tensorrt.dynamo.partitioning import _adjacency_partitioner as adjacency
    from torch_tensorrt.dynamo.partitioning import _global_partitioner as global_

    registry = converter_registry()
    settings = default_settings(min_block_size=min_block_size, torch_executed_ops=set(torch_executed_ops),
                                require_full_compilation=require_full_compilation, use_fast_partitioner=fast)
    names_before = {n.name for n in gm.graph.nodes}
    callable_before = {n.name for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")}
    fast_cls, global_cls = adjacency.TRTPartitioner, global_.TRTPartitioner
    small_pass, propose = fast_cls.remove_small_acc_subgraphs, global_cls.propose_partitions
    seen: dict[str, Any] = {}

    def recording_small(self: Any, subgraphs: list) -> list:
        seen["before"] = [(s.is_acc, [n.name for n in s.nodes]) for s in subgraphs]
        result = small_pass(self, subgraphs)
        seen["after"] = [(s.is_acc, [n.name for n in s.nodes]) for s in result]
        return result

    def recording_propose(self: Any) -> list:
        result = propose(self)
        seen["partitions"] = [[n.name for n in part.nodes] for part in result]
        return result

    saved = registry.compilation_settings, registry.disallowed_targets
    fast_cls.remove_small_acc_subgraphs, global_cls.propose_partitions = recording_small, recording_propose
    try:
        with answer_cuda_queries():
            registry.set_compilation_settings(settings)
            num_supported, total = partitioning.get_graph_converter_support(gm, settings.torch_executed_ops)
            tester = (adjacency.OpSupportTester if fast else global_.TorchTensorRTOperatorSupport)(
                torch_executed_ops=settings.torch_executed_ops)
            modules = dict(gm.named_modules())
            supported = {n.name for n in gm.graph.nodes if n.op == "call_function"
                         and tester.is_node_supported(modules, n)}
            if num_supported == 0 or num_supported < min_block_size:
                return CompilePartition("fast" if fast else "global", [], [], [], supported, set(),
                                        num_supported, total, early_return=num_supported)
            fell_back = None
            if fast:
                try:
                    partitioning.fast_partition(
                        gm, min_block_size=min_block_size, torch_executed_ops=settings.torch_executed_ops,
                        require_full_compilation=require_full_compilation, skip_fusion=(num_supported == total))
                except FxNetSplitterInternalError as exc:
                    fell_back = f"{type(exc).__name__}: {exc}"
                    seen.clear()
            if not fast or fell_back:
                partitioning.global_partition(
                    gm, min_block_size=min_block_size, torch_executed_ops=settings.torch_executed_ops,
                    require_full_compilation=require_full_compilation)
    except AssertionError as exc:
        raise ConfigError(f"torch_tensorrt.compile's partitioner: {exc}; set require_full_compilation=False "
                          "or give the ops it lists a converter") from exc
    finally:
        fast_cls.remove_small_acc_subgraphs, global_cls.propose_partitions = small_pass, propose
        registry.compilation_settings, registry.disallowed_targets = saved
    if "after" in seen:
        acc = [names for is_acc, names in seen["after"] if is_acc]
        rest = [names for is_acc, names in seen["after"] if not is_acc]
        kept = {name for _, names in seen["before"] for name in names}
        return CompilePartition("fast", acc, rest, seen["before"], supported, callable_before - kept,
                                num_supported, total)
    acc = seen.get("partitions", [])
    in_acc = {name for names in acc for name in names}
    runs: list[list[str]] = [[]]  # the nodes left in the top graph, split at each TensorRT block
    for n in gm.graph.nodes:
        if n.name in names_before and n.name in callable_before and n.name not in in_acc:
            runs[-1].append(n.name)
        elif n.op == "call_module" and n.name not in names_before and runs[-1]:
            runs.append([])
    return CompilePartition("global", acc, [r for r in runs if r], [], supported, set(),
                            num_supported, total, fell_back=fell_back)


# ----------------------------------------------------------------------------- settings
# Which CompilationSettings fields act when hierviz converts a subgraph (convert_module and the
# TorchTensorRTModule it returns), read from Torch-TensorRT 2.14's conversion and runtime code.
# Every other field acts elsewhere, and is refused with where it belongs.
CONVERSION_FIELDS = frozenset({
    "workspace_size", "max_aux_streams", "version_compatible", "optimization_level", "truncate_double",
    "device", "assume_dynamic_shape_support", "sparse_weights", "engine_capability",
    "num_avg_timing_iters", "dla_sram_size", "dla_local_dram_size", "dla_global_dram_size",
    "hardware_compatible", "timing_cache_path", "lazy_engine_init", "use_fp32_acc",
    "refit_identical_engine_weights", "strip_engine_weights", "immutable_weights",
    "enable_weight_streaming", "tiling_optimization_level", "l2_limit_for_tiling",
    "offload_module_to_cpu", "dynamically_allocate_resources",
})
_ELSEWHERE = {
    "is a partitioning setting: set it on hv.Config (hv.partition(..., {field}=...))":
        ("min_block_size", "torch_executed_ops", "require_full_compilation"),
    "is an option of Torch-TensorRT's own partitioners; hierviz partitions with hv.Config":
        ("use_fast_partitioner", "fallback_data_dependent_ops", "enable_resource_partitioning",
         "cpu_memory_budget"),
    "is a lowering setting: lowering happens in hv.capture, with Torch-TensorRT's default "
    "settings; lower the model yourself and pass the ExportedProgram or GraphModule to hv.capture":
        ("enable_experimental_decompositions", "decompose_attention", "use_complex_decomposition",
         "enable_autocast", "autocast_low_precision_type", "autocast_excluded_nodes",
         "autocast_excluded_ops", "autocast_max_output_threshold", "autocast_max_depth_of_reduction",
         "autocast_calibration_dataloader", "disabled_constant_fold_exclusions", "attn_bias_is_causal",
         "use_distributed_mode_trace"),
    "has no effect here (Torch-TensorRT only warns); hv.measure caches compiled subgraphs "
    "itself: pass cache_dir= to keep them on disk":
        ("cache_built_engines", "reuse_cached_engines"),
    "has no effect here: use Partition.report() for the dry-run report": ("dryrun",),
    "has no effect here: use hv.measure(on_error='fallback') to run failing subgraphs eagerly":
        ("pass_through_build_failures",),
    "builds engines that run only on Windows, so they cannot be timed here":
        ("enable_cross_compile_for_windows",),
    "is set by hv.measure for every backend alike: pass tf32=True/False to hv.measure":
        ("disable_tf32",),
}
_REMOVED = {
    "enabled_precisions": "Torch-TensorRT 2.14 networks are strongly typed: an engine computes in the "
                          "graph's dtype. For FP16/BF16, cast the model and inputs (model.half()) "
                          "before hv.capture",
    "use_explicit_typing": "networks are always strongly typed in Torch-TensorRT 2.14",
    "use_python_runtime": "Torch-TensorRT 2.14 has one runtime (TorchTensorRTModule)",
}


def _where(field: str) -> str | None:
    for where, fields in _ELSEWHERE.items():
        if field in fields:
            return where.format(field=field)
    return None


def conversion_settings(settings: Any = None, device: Any = None, *, tf32: bool = False) -> Any:
    """The CompilationSettings hierviz converts subgraphs with: `settings` (None, or a dict of
    conversion fields, see CONVERSION_FIELDS), built for `device` (normalised: 'cuda:1', 1, a
    torch.device or a torch_tensorrt.Device all mean GPU 1) and with TF32 as `tf32` says (off by
    default, as torch runs FP32 matmuls). ConfigError for unknown, removed, no-op or
    non-conversion fields, saying where each belongs."""
    require()
    from torch_tensorrt import Device
    from torch_tensorrt.dynamo import CompilationSettings

    if settings is None:
        settings = {}
    elif isinstance(settings, CompilationSettings):
        defaults = default_settings()
        settings = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
                    if f.name != "device" and getattr(settings, f.name) != getattr(defaults, f.name)}
    elif not isinstance(settings, dict):
        raise ConfigError(f"trt_settings must be a dict of Torch-TensorRT CompilationSettings fields, not "
                          f"{type(settings).__name__}")
    known = {f.name for f in dataclasses.fields(CompilationSettings)}
    problems = []
    for field in sorted(settings, key=str):
        if field in CONVERSION_FIELDS:
            continue
        if field in _REMOVED:
            problems.append(f"{field!r} does not exist: {_REMOVED[field]}")
        elif field in known:
            problems.append(f"{field!r} {_where(field) or 'does not act at conversion'}")
        else:
            close = difflib.get_close_matches(str(field), sorted(known), n=3)
            problems.append(f"{field!r} is not a CompilationSettings field"
                            + (f" (did you mean {' or '.join(close)}?)" if close else ""))
    if problems:
        raise ConfigError("trt_settings: " + "; ".join(problems) + ". Accepted here (they act at "
                          "conversion): " + ", ".join(sorted(CONVERSION_FIELDS)))
    fields = dict(settings)
    index = cuda_index(fields.pop("device", device))
    if device is not None and cuda_index(device) != index:
        raise ConfigError(f"trt_settings['device'] names GPU {index} but the measurement runs on "
                          f"{device}; give the device once, as hv.measure(device=...)")
    try:
        with answer_cuda_queries():
            built = CompilationSettings(**fields, device=Device(gpu_id=index), disable_tf32=not tf32)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"trt_settings: {exc}") from None
    return built


def compilation_settings(settings: Any = None) -> Any:
    """A CompilationSettings from None (the defaults), a dict of its fields, or one as is
    (any field; for conversion use `conversion_settings`, which checks where fields act)."""
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
            raise ConfigError(f"unknown Torch-TensorRT CompilationSettings field(s) {unknown}; "
                              f"known fields include {sorted(known)[:12]} ...")
        return default_settings(**settings)
    raise ConfigError(f"TensorRT settings must be a dict or a CompilationSettings, not {type(settings).__name__}")


def _canonical(value: Any) -> Any:
    """A JSON-able form of a settings value that is the same in every process."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if hasattr(value, "gpu_id"):  # torch_tensorrt.Device
        return f"gpu:{value.gpu_id}"
    if hasattr(value, "name") and hasattr(type(value), "__members__"):  # enums
        return f"{type(value).__name__}.{value.name}"
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    text = repr(value)
    return re.sub(r" at 0x[0-9a-f]+", "", text)  # no addresses


def settings_digest(settings: Any = None) -> str:
    """A SHA-256 (hex, 16 chars) of TensorRT settings, equal in every process for equal settings
    (sets are sorted, enums and devices named, no object addresses)."""
    if settings is None:
        body: Any = "defaults"
    elif isinstance(settings, dict):
        body = _canonical(settings)
    elif dataclasses.is_dataclass(settings):
        body = {f.name: _canonical(getattr(settings, f.name)) for f in dataclasses.fields(settings)}
    else:
        body = _canonical(settings)
    text = json.dumps(body, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def settings_key(settings: Any = None) -> tuple:
    """The cache-key part for TensorRT settings: the TensorRT library version and the digest."""
    lib = getattr(_tensorrt(), "__version__", None) if available() else None
    return ("tensorrt", lib, settings_digest(settings))


# ----------------------------------------------------------------------------- engines
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
    with on_gpu:
        module = convert_module(gm, inputs, settings=settings, name=name)
        if getattr(module, "engine", None) is None:  # lazy_engine_init: upstream calls this after conversion
            module.setup_engine()
    return module


def save_engine(module: Any, path: str | Path) -> None:
    """Write a TorchTensorRTModule through its documented state (state_dict, whose extra state
    is the serialized engine, its bindings and settings)."""
    torch.save({"format": "hierviz-tensorrt-v1", "state": module.state_dict()}, str(path))


def load_engine(path: str | Path) -> Any:
    """A TorchTensorRTModule read back from `save_engine`'s file (needs a CUDA GPU)."""
    require()
    from torch_tensorrt.dynamo.runtime import TorchTensorRTModule

    data = torch.load(str(path), weights_only=False)
    if not isinstance(data, dict) or data.get("format") != "hierviz-tensorrt-v1":
        raise ValueError(f"{path} is not a hierviz TensorRT engine file")
    module = TorchTensorRTModule()
    module.load_state_dict(data["state"])
    return module


def engine_bytes(module: Any) -> int:
    """Size of a TorchTensorRTModule's serialized engine (0 when unknown)."""
    blob = getattr(module, "serialized_engine", None)
    return len(blob) if isinstance(blob, (bytes, bytearray)) else 0


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
