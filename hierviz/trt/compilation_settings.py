"""The CompilationSettings hierviz converts subgraphs with: which fields act at conversion,
where every other field belongs (each refused with that answer), and a digest of settings
that is the same in every process (the compile cache's key).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import numbers
import os
import re
import tempfile
from dataclasses import dataclass
from typing import Any, Callable

from hierviz.errors import ConfigError
from hierviz.foundation.digests import json_digest
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


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class Rule:
    """What one conversion field takes. `allowed`: in words, with Torch-TensorRT's default;
    `types`: the field's type names in CompilationSettings (int, NoneType, ...); `default`: its
    default (an enum by name); `same`: other values that build the same engine as the default."""

    allowed: str
    types: tuple[str, ...]
    default: Any
    accepts: Callable[[Any], bool]
    same: tuple = ()


def _ints(low: int, high: int | None = None, *, none: bool = False) -> Callable[[Any], bool]:
    return lambda v: (none and v is None) or (_is_int(v) and v >= low and (high is None or v <= high))


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


ENGINE_CAPABILITIES = ("STANDARD", "SAFETY", "DLA_STANDALONE")
TILING_LEVELS = ("none", "fast", "moderate", "full")  # Torch-TensorRT's names for TensorRT's TilingOptimizationLevel


def _capability(value: Any) -> str | None:
    """The EngineCapability's name of `value` (torch_tensorrt's or TensorRT's enum, or its name in
    any case), or None when it is none."""
    if isinstance(value, str):
        name = value.upper()
    elif type(value).__name__ == "EngineCapability":
        name = getattr(value, "name", "")
    else:
        return None
    return name if name in ENGINE_CAPABILITIES else None


def _flag(default: bool) -> Rule:
    return Rule(f"True or False (Torch-TensorRT's default {default})", ("bool",), default, _is_bool)


# What each conversion field takes, read from Torch-TensorRT 2.14's CompilationSettings (its types and
# defaults) and TensorRT's builder (its ranges). A plain table, so part.build() checks settings without
# importing torch_tensorrt; tests/trt/test_settings_check.py checks it against the installed CompilationSettings.
FIELDS: dict[str, Rule] = {
    "workspace_size": Rule("an int >= 0, in bytes (Torch-TensorRT's default 0: TensorRT's own limit)",
                           ("int",), 0, _ints(0)),
    "max_aux_streams": Rule("None or an int >= 0 (Torch-TensorRT's default None: TensorRT chooses)",
                            ("int", "NoneType"), None, _ints(0, none=True)),
    "optimization_level": Rule("an int from 0 to 5 (Torch-TensorRT's default None: TensorRT's default 3)",
                               ("int", "NoneType"), None, _ints(0, 5, none=True), same=(3,)),
    "num_avg_timing_iters": Rule("an int >= 0 (Torch-TensorRT's default 1)", ("int",), 1, _ints(0)),
    "dla_sram_size": Rule("an int >= 1, in bytes (Torch-TensorRT's default 1048576)", ("int",), 1048576, _ints(1)),
    "dla_local_dram_size": Rule("an int >= 1, in bytes (Torch-TensorRT's default 1073741824)",
                                ("int",), 1073741824, _ints(1)),
    "dla_global_dram_size": Rule("an int >= 1, in bytes (Torch-TensorRT's default 536870912)",
                                 ("int",), 536870912, _ints(1)),
    "engine_capability": Rule("an EngineCapability (torch_tensorrt.EngineCapability.STANDARD, SAFETY or "
                              "DLA_STANDALONE, or its name; Torch-TensorRT's default STANDARD)",
                              ("EngineCapability",), "STANDARD", lambda v: _capability(v) is not None),
    "tiling_optimization_level": Rule("one of " + ", ".join(map(repr, TILING_LEVELS))
                                      + " (Torch-TensorRT's default 'none')", ("str",), "none",
                                      lambda v: v in TILING_LEVELS and isinstance(v, str)),
    "l2_limit_for_tiling": Rule("an int >= -1, in bytes (Torch-TensorRT's default -1: no limit)",
                                ("int",), -1, _ints(-1)),
    "timing_cache_path": Rule("a file path (str or os.PathLike; Torch-TensorRT's default in the temp folder)",
                              ("str",), os.path.join(tempfile.gettempdir(), "torch_tensorrt_engine_cache",
                                                     "timing_cache.bin"), _is_path),
    "device": Rule("a CUDA device: 'cuda', 'cuda:N', N, a torch.device or a torch_tensorrt.Device",
                   ("Device",), None, lambda v: True),
    **{name: _flag(default) for name, default in (
        ("version_compatible", False), ("truncate_double", False), ("assume_dynamic_shape_support", False),
        ("sparse_weights", False), ("hardware_compatible", False), ("lazy_engine_init", False),
        ("use_fp32_acc", False), ("refit_identical_engine_weights", False), ("strip_engine_weights", False),
        ("immutable_weights", True), ("enable_weight_streaming", False), ("offload_module_to_cpu", False),
        ("dynamically_allocate_resources", False))},
}


def known_fields() -> set[str]:
    """Every CompilationSettings field hierviz knows (conversion fields and those it refuses, saying
    where they belong)."""
    return set(FIELDS) | {f for fields in _ELSEWHERE.values() for f in fields}


def _where(field: str) -> str | None:
    for where, fields in _ELSEWHERE.items():
        if field in fields:
            return where.format(field=field)
    return None


def check_settings(trt_settings: dict | None) -> None:
    """ConfigError unless `trt_settings` (part.build()'s and hv.measure's, None or a dict) names
    only conversion fields, each with a value that CompilationSettings and TensorRT's builder take:
    one message naming every bad field, its value and what is allowed (or where a field that does
    not act at conversion belongs). Needs no torch_tensorrt."""
    if trt_settings is None:
        return
    if not isinstance(trt_settings, dict):
        raise ConfigError(f"trt_settings must be a dict of Torch-TensorRT CompilationSettings fields, not "
                          f"{type(trt_settings).__name__}")
    names, values = [], []
    for field in sorted(trt_settings, key=str):
        value = trt_settings[field]
        if field in FIELDS:
            if field == "device":
                cuda_index(value)  # ConfigError saying what a device is
            elif not FIELDS[field].accepts(value):
                values.append(f"trt_settings[{field!r}] = {value!r}: {FIELDS[field].allowed}")
        elif field in _REMOVED:
            names.append(f"{field!r} does not exist: {_REMOVED[field]}")
        elif field in known_fields():
            names.append(f"{field!r} {_where(field)}")
        else:
            close = difflib.get_close_matches(str(field), sorted(known_fields()), n=3)
            names.append(f"{field!r} is not a CompilationSettings field"
                         + (f" (did you mean {' or '.join(close)}?)" if close else ""))
    if names:
        raise ConfigError("trt_settings: " + "; ".join(names) + ". Accepted here (they act at "
                          "conversion): " + ", ".join(sorted(CONVERSION_FIELDS)))
    if values:
        raise ConfigError("; ".join(values) + ".")


def _effective(field: str, value: Any) -> Any:
    """One form for values that build the same engine: ints as int, paths as str, an
    EngineCapability by its name."""
    if _is_int(value):
        return int(value)
    if field == "engine_capability":
        return _capability(value) or value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def _non_default(settings: dict) -> dict:
    """The conversion fields of `settings` (device left out) whose value builds another engine than
    the default does, each in its effective form."""
    fields = {}
    for field, value in settings.items():
        if field == "device" or field == "disable_tf32":
            continue
        rule = FIELDS.get(field)
        value = _effective(field, value)
        if rule is None or not any(type(value) is type(d) and value == d for d in (rule.default, *rule.same)):
            fields[field] = value
    return fields


def conversion_settings(settings: Any = None, device: Any = None, *, tf32: bool = False) -> Any:
    """The CompilationSettings hierviz converts subgraphs with: `settings` (None, or a dict of
    conversion fields, see CONVERSION_FIELDS), built for `device` (normalised: 'cuda:1', 1, a
    torch.device or a torch_tensorrt.Device all mean GPU 1) and with TF32 as `tf32` says (off by
    default, as torch runs FP32 matmuls). ConfigError for unknown, removed, no-op or
    non-conversion fields, saying where each belongs, and for values they do not take (check_settings)."""
    if settings is None or isinstance(settings, dict):
        check_settings(settings)  # before needing torch_tensorrt: a wrong value says so wherever it is missing
    require()
    from torch_tensorrt import Device, EngineCapability
    from torch_tensorrt.dynamo import CompilationSettings

    if settings is None:
        settings = {}
    elif isinstance(settings, CompilationSettings):
        defaults = default_settings()
        settings = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
                    if f.name != "device" and getattr(settings, f.name) != getattr(defaults, f.name)}
    check_settings(settings)
    fields = dict(settings)
    index = cuda_index(fields.pop("device", device))
    if device is not None and cuda_index(device) != index:
        raise ConfigError(f"trt_settings['device'] names GPU {index} but the measurement runs on "
                          f"{device}; give the device once, as hv.measure(device=...)")
    if "engine_capability" in fields:
        fields["engine_capability"] = EngineCapability[_capability(fields["engine_capability"]) or ""]
    if "timing_cache_path" in fields:
        fields["timing_cache_path"] = os.fspath(fields["timing_cache_path"])
    try:
        with answer_cuda_queries():
            built = CompilationSettings(**fields, device=Device(gpu_id=index), disable_tf32=not tf32)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"trt_settings: {exc}") from None
    return built


def conversion_fields(settings: Any = None) -> tuple[dict, bool]:
    """(the conversion fields that differ from their defaults, TF32 on) of trt_settings as the
    user gives them (a dict, or None) or as hv.measure converts with them (a CompilationSettings),
    device left out, each value in one form (check_settings' table, no torch_tensorrt import):
    equal whenever the settings build the same engine. The build cache's key part."""
    if settings is None:
        return {}, False
    if isinstance(settings, dict):
        return _non_default(settings), False
    fields = {name: getattr(settings, name) for name in CONVERSION_FIELDS if hasattr(settings, name)}
    return _non_default(fields), not settings.disable_tf32


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
    return json_digest(body, size=16)


def settings_key(settings: Any = None) -> tuple:
    """The cache-key part for TensorRT settings: the TensorRT library version and the digest."""
    lib = getattr(tensorrt_library(), "__version__", None) if available() else None
    return ("tensorrt", lib, settings_digest(settings))


__all__ = ["CONVERSION_FIELDS", "FIELDS", "Rule", "check_settings", "known_fields", "conversion_fields",
           "conversion_settings", "settings_digest", "settings_key"]
