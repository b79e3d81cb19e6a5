"""The one place that imports torch_tensorrt, usable without a GPU: `from hierviz import trt`.

    loading.py       importing it without a GPU (the CUDA queries answered), whether it is there
    targets.py       whether this TensorRT can build engines for this GPU, and why not (TRTInfo)
    partitioners.py  Torch-TensorRT's own partitioners and converter registry, run for comparison
    validation.py    `node in registry` for every node of a run, with what cannot change kept (Validator)
    compilation_settings.py      the CompilationSettings subgraphs are converted with, and their digest
    dynamo_lowering.py  Torch-TensorRT's lowering of one dynamo graph (torch.compile's backend)
    causal_attention_pass.py  its force_causal_efficient_attention pass watched while hierviz lowers
    constant_folding.py  its constant folding told to leave a node as it is
    compile_dryrun.py  its torch.compile backend run to its partitioner and stopped there (the reference)
    subgraph_engines.py  building a subgraph's engine, saving and loading it, build caches
    engine_builder.py  converting a subgraph and building its engine with no GPU (where it stops)
    engine_build.py  the record of one conversion and build (EngineBuild)
    engine_file.py   the serialized engine streamed into a temp file as it is built (EngineFile)
    build_errors.py  what a failed conversion or build says, and whose failure it is
    tensorrt_error_log.py  TensorRT's logger with its errors kept while a build runs
    quiet_logging.py  Torch-TensorRT's logging held back while it converts and builds

Every name is reached as `trt.<name>`; nothing else in hierviz imports torch_tensorrt.
"""

from __future__ import annotations

from hierviz.foundation.error_text import first_line
from hierviz.trt.compile_dryrun import (
    COMPILE_CUDA_ANSWERS,
    DryrunGraph,
    compile_dryrun,
    partition_again,
    stopped_at_partitioner,
)
from hierviz.trt.build_errors import error_line
from hierviz.trt.engine_build import EngineBuild
from hierviz.trt.engine_builder import builder_name, builds_without_gpu, convert_and_build
from hierviz.trt.causal_attention_pass import force_causal_watched
from hierviz.trt.constant_folding import keep_unfolded, left_unfolded, unmark as unmark_unfolded
from hierviz.trt.dynamo_lowering import (BACKEND_CATCHES, caught_by_backend, dynamo_settings, fake_mode_of,
                                         lower_dynamo_graph)
from hierviz.trt.subgraph_engines import (
    build_caches,
    build_state,
    compile_submodule,
    engine_module,
    is_dynamic,
    load_engine,
    save_engine,
    submodule_inputs,
)
from hierviz.trt.loading import (
    DISTRIBUTIONS,
    FIX_DATACENTER,
    FIX_RTX,
    answer_cuda_queries,
    available,
    default_settings,
    installed_distribution,
    installed_variant,
    LIBRARY_DISTRIBUTIONS,
    library_version,
    load,
    loaded,
    lowering,
    lowering_device,
    present,
    require,
    tensorrt_library,
)
from hierviz.trt.partitioners import (
    CompilePartition,
    converter_targets,
    current_validator,
    patched,
    run_compile_partitioner,
    run_upstream_partitioner,
    validating,
)
from hierviz.trt.registry_lock import converter_registry, registry_held
from hierviz.trt.validation import Validator
from hierviz.trt.compilation_settings import (CONVERSION_FIELDS, check_settings, conversion_fields,
                                              conversion_settings, settings_digest, settings_key)
from hierviz.trt.targets import (
    STANDARD_MIN_CAPABILITY,
    TRTInfo,
    build_targets,
    build_verdict,
    cuda_index,
    info,
    require_build,
    sm,
)

__all__ = ["BACKEND_CATCHES", "caught_by_backend", "FIX_DATACENTER", "FIX_RTX", "answer_cuda_queries", "available",
           "default_settings", "installed_variant", "installed_distribution", "present", "loaded", "DISTRIBUTIONS",
           "load", "lowering", "lowering_device", "require", "tensorrt_library", "STANDARD_MIN_CAPABILITY", "TRTInfo",
           "build_targets", "build_verdict", "cuda_index", "info", "require_build", "sm", "CompilePartition",
           "converter_registry", "converter_targets", "current_validator", "Validator", "patched",
           "run_compile_partitioner", "run_upstream_partitioner", "registry_held", "validating", "CONVERSION_FIELDS",
           "check_settings", "conversion_fields", "conversion_settings", "settings_digest", "settings_key",
           "build_caches", "build_state",
           "compile_submodule", "engine_module", "is_dynamic", "load_engine", "save_engine", "submodule_inputs",
           "dynamo_settings", "fake_mode_of", "lower_dynamo_graph", "COMPILE_CUDA_ANSWERS", "DryrunGraph",
           "compile_dryrun", "partition_again", "stopped_at_partitioner", "EngineBuild", "builder_name",
           "builds_without_gpu", "convert_and_build", "error_line", "first_line", "LIBRARY_DISTRIBUTIONS",
           "library_version", "force_causal_watched", "keep_unfolded", "left_unfolded", "unmark_unfolded"]
