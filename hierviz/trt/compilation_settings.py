"""The CompilationSettings hierviz converts subgraphs with: which fields act at conversion,
where every other field belongs (each refused with that answer), and a digest of settings
that is the same in every process (the compile cache's key).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import re
from typing import Any

from hierviz.errors import ConfigError
from hierviz.trt.loading import answer_cuda_queries, available, default_settings, require, tensorrt_library
from hierviz.trt.targets import cuda_index

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


def conversion_fields(settings: Any = None) -> tuple[dict, bool]:
    """(the conversion fields set, TF32 on) of trt_settings as the user gives them (a dict, or
    None) or as hv.measure converts with them (a CompilationSettings: the fields that differ
    from the defaults), device left out: equal for the same settings either way, without
    importing torch_tensorrt for a dict. The build cache's key part."""
    if settings is None:
        return {}, False
    if isinstance(settings, dict):
        fields = {k: v for k, v in settings.items() if k != "device"}
        return fields, False
    defaults = default_settings()
    fields = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
              if f.name not in ("device", "disable_tf32") and getattr(settings, f.name) != getattr(defaults, f.name)}
    return fields, not settings.disable_tf32


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
    lib = getattr(tensorrt_library(), "__version__", None) if available() else None
    return ("tensorrt", lib, settings_digest(settings))


__all__ = ["CONVERSION_FIELDS", "conversion_fields", "conversion_settings", "settings_digest", "settings_key"]
