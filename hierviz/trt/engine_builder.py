"""Converting a subgraph with Torch-TensorRT's converters and building its TensorRT engine,
with no GPU: the two steps `TRTInterpreter.run()` takes before it deserializes the engine
(which alone needs a GPU).

`convert_and_build(gm)` runs every converter of `gm` into a TensorRT network
(`TRTInterpreter._construct_trt_network_def`), then TensorRT's builder on it
(`builder.build_serialized_network`), and says where it stopped: `convert` (a converter
raised; the node it was converting; the error TensorRT logged, where it logged one that says
what failed, else the exception's), `build` (the builder returned no engine; TensorRT's own
error from its log), or `built` (the serialized engine). TensorRT-RTX builds ahead of time on
a CPU; standard TensorRT needs its GPU for a build.

The engine is streamed into a file as TensorRT serializes it (engine_file.py); the build's
`engine_file` is moved into the build cache by the engine store, or deleted once dropped. What
it gives is an `EngineBuild` (engine_build.py); what a failure says, and whose failure it is, is
build_errors.py's; TensorRT's logged errors are kept by tensorrt_error_log.py and Torch-TensorRT's
logging held back by quiet_logging.py. EngineBuild, EngineFile, TMP_PREFIX, error_line and
first_line are named here too.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable

import torch

from hierviz.errors import BuildError
from hierviz.foundation.error_text import first_line
from hierviz.foundation.thread_warnings import ThreadWarnings
from hierviz.foundation.torch_output import native_output
from hierviz.trt.build_errors import (OUT_OF_MEMORY, ErrorLine, error_details, error_line, hierviz_failed,
                                      informative_line, logged_cause, not_supported_error, not_the_subgraphs,
                                      out_of_memory_error, telling_error, warning_texts)
from hierviz.trt.compilation_settings import conversion_settings
from hierviz.trt.engine_build import EngineBuild
from hierviz.trt.engine_file import TMP_PREFIX, EngineFile, serialize_engine
from hierviz.trt.module_stacks import module_stacks_kept
from hierviz.trt.loading import answer_cuda_queries, installed_variant, library_version, require
from hierviz.trt.quiet_logging import QuietLogging
from hierviz.trt.registry_lock import registry_held
from hierviz.trt.tensorrt_error_log import TensorRTErrorLog

logger = logging.getLogger(__name__)

# One conversion at a time: converters and the builder share Torch-TensorRT's registry and
# TensorRT's logger, so two threads converting at once would read each other's errors.
_CONVERTING = threading.Lock()


def builder_name() -> str | None:
    """The builder in words, 'TensorRT-RTX 1.6.1' or 'TensorRT 10.13.3', read from the installed
    library's metadata (no import); None when no TensorRT library is installed."""
    lib = library_version()
    if lib is None:
        return None
    short = ".".join(lib.split(".")[:3])
    return f"TensorRT-RTX {short}" if installed_variant()[1] == "rtx" else f"TensorRT {short}"


def builds_without_gpu() -> bool:
    """Whether the installed TensorRT builds engines ahead of time with no GPU (TensorRT-RTX)."""
    return installed_variant()[1] == "rtx"


def convert_and_build(gm: torch.fx.GraphModule, settings: Any = None, *, label: str = "",
                      engine_folder: Path | None = None, wait_for_disk: bool = True,
                      alongside: Callable[[], Any] | None = None) -> EngineBuild:
    """Convert `gm` (a `_run_on_acc_tensorrt_*` submodule, named `label`) with Torch-TensorRT's
    converters and build its engine, as `torch_tensorrt.compile` does (inputs from the
    placeholders' `meta['val']`, the settings hv.measure converts with), without deserializing
    it. What the subgraph does (a converter raising, the builder giving no engine) is the answer;
    what is not its doing (out of memory, an interrupt, hierviz failing to call Torch-TensorRT)
    raises BuildError. Torch-TensorRT's warnings are held back, on `.warnings`. The engine is
    written into a temp file in `engine_folder` (the build cache's, so that moving it there is a
    rename; the system's temp folder when None): `.engine_file`. `wait_for_disk=False`: it
    returns once TensorRT has handed the engine over, its last pieces maybe still being written
    (`engine_file.finish()` waits for them: the build cache does, on a thread of its own).

    `alongside()` runs on a thread of its own from when TensorRT's builder starts (which holds
    no interpreter lock: the CPU a build leaves); it is waited for, and what it raises is raised
    (the engine discarded), after the build. Not when the conversion fails. Its warnings are not
    Torch-TensorRT's (they reach the user), and it sees CUDA as it is."""
    if alongside is None:
        return _convert_and_build(gm, settings, label, engine_folder, wait_for_disk, None)
    side: list[concurrent.futures.Future] = []
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="hierviz-alongside") as pool:
        made = _convert_and_build(gm, settings, label, engine_folder, wait_for_disk,
                                  lambda: side.append(pool.submit(alongside)))
    if side and side[0].exception() is not None:
        if made.engine_file is not None:
            made.engine_file.discard()
        side[0].result()
    return made


def _convert_and_build(gm: torch.fx.GraphModule, settings: Any, label: str, engine_folder: Path | None,
                       wait_for_disk: bool, building: Callable[[], None] | None) -> EngineBuild:
    """convert_and_build; `building()` is called as TensorRT's builder starts."""
    require()
    try:
        from torch_tensorrt.dynamo import CompilationSettings
        from torch_tensorrt.dynamo.conversion._conversion import infer_module_output_dtypes
        from torch_tensorrt.dynamo.conversion._symbolic_shape_capture import extract_symbolic_shape_expressions
        from torch_tensorrt.dynamo.conversion._TRTInterpreter import TRTInterpreter
        from torch_tensorrt.dynamo.partitioning import construct_submodule_inputs
        from torch_tensorrt.logging import TRT_LOGGER
    except ImportError as exc:
        raise not_supported_error(exc) from exc

    if not isinstance(settings, CompilationSettings):
        settings = conversion_settings(settings)
    name = label or "the subgraph"
    # every warning of this thread recorded (deduplicated below), none printed; other threads' reach
    # the user (a build cache write finished behind the last build: hierviz.foundation.writes_behind)
    # CUDA's queries answered while Torch-TensorRT converts and makes the builder's config (not while
    # TensorRT builds, when `building` may run its own work)
    with _CONVERTING, registry_held(), QuietLogging() as held, ThreadWarnings() as heard, module_stacks_kept(gm):
        start = time.perf_counter()
        interpreter = None
        try:
            with not_the_subgraphs(f"Torch-TensorRT converted {name}", gm), answer_cuda_queries():
                # as interpret_module_to_result does first: a subgraph whose outputs have no shapes
                # to read (a LayerNorm's whole tuple leaving the engine) fails there, before converting
                expressions = extract_symbolic_shape_expressions(gm)
                if expressions is None:
                    raise RuntimeError("Failed to extract symbolic shape expressions from source FX graph partition")
                inputs = list(construct_submodule_inputs(gm))
                dtypes = infer_module_output_dtypes(gm, truncate_double=settings.truncate_double)
                interpreter = TRTInterpreter(gm, inputs, output_dtypes=dtypes, compilation_settings=settings)
                interpreter._construct_trt_network_def()
        except BuildError:
            raise
        except Exception as exc:  # what a converter raised is the answer
            if hierviz_failed(exc):
                raise not_supported_error(exc) from exc
            logger.debug("Torch-TensorRT could not convert the subgraph", exc_info=True)
            node = getattr(interpreter, "_cur_node_name", None) if interpreter is not None else None
            cause = logged_cause(held.tensorrt_lines)  # TensorRT's own line says more than the exception
            line = informative_line(cause or exc)
            return EngineBuild("convert", None, time.perf_counter() - start, None, node=node,
                               exception=type(exc).__name__, error=line.text, error_cut=line.cut,
                               details=error_details([*held.lines, error_details(exc)]),
                               warnings=warning_texts(heard))
        convert_s = time.perf_counter() - start
        layers = int(interpreter.ctx.net.num_layers)
        start = time.perf_counter()
        doing = f"TensorRT built {name}"
        try:
            with not_the_subgraphs(doing, gm), TensorRTErrorLog(TRT_LOGGER) as log, native_output() as printed:
                with answer_cuda_queries():
                    config = interpreter._populate_trt_builder_config(False, None)
                if building is not None:
                    building()
                serialized = serialize_engine(interpreter.builder, interpreter.ctx.net, config, engine_folder,
                                              wait=wait_for_disk)
        except BuildError:
            raise
        except Exception as exc:  # what TensorRT's builder raised is the answer
            if hierviz_failed(exc):
                raise not_supported_error(exc) from exc
            logger.debug("TensorRT could not build the engine", exc_info=True)
            line = informative_line(exc)
            return EngineBuild("build", layers, convert_s, time.perf_counter() - start, exception=type(exc).__name__,
                               error=line.text, error_cut=line.cut, details=error_details(exc),
                               warnings=warning_texts(heard))
        build_s = time.perf_counter() - start
        if serialized is None:
            # named as upstream's build (build_serialized_network) names itself: the stream is hierviz's doing
            errors = [e.replace("buildSerializedNetworkToStream", "buildSerializedNetwork")
                      for e in log.errors or printed if e.strip()]
            memory = next((e for e in errors if OUT_OF_MEMORY.search(e)), None)
            if memory is not None:
                raise out_of_memory_error(doing, gm, error_line(memory))
            said = telling_error(errors)
            line = informative_line(said) if said else \
                ErrorLine("TensorRT build_serialized_network returned None; engine build failed.", False)
            return EngineBuild("build", layers, convert_s, build_s, exception="RuntimeError",
                               error=line.text, error_cut=line.cut,
                               details=error_details([*held.lines, *errors]) or None, warnings=warning_texts(heard))
        engine_file = serialized if isinstance(serialized, EngineFile) else None
        # else TensorRT's buffer itself, not a copy of it (2.2 GB more for a 1.1B model): the build
        # cache takes its length, hashes it and writes it, which a view of the buffer serves as bytes would
        engine: Any = None if engine_file is not None else memoryview(serialized).cast("B")
        runtime = {"input_binding_names": list(interpreter._input_names),
                   "output_binding_names": list(interpreter._output_names),
                   "requires_output_allocator": bool(interpreter.ctx.requires_output_allocator),
                   "requires_native_multidevice": bool(getattr(interpreter.ctx, "requires_native_multidevice", False)),
                   "aliased_io": dict(interpreter._aliased_io),
                   "symbolic_shape_expressions": expressions}
        del interpreter
        logged = tuple(dict.fromkeys(f"logged an error: {e}" for e in held.lines))
        return EngineBuild("built", layers, convert_s, build_s, engine=engine, runtime=runtime,
                           warnings=warning_texts(heard) + logged,
                           engine_file=engine_file, engine_size=engine_file.size if engine_file is not None else None)


__all__ = ["EngineBuild", "EngineFile", "TMP_PREFIX", "builder_name", "builds_without_gpu", "convert_and_build",
           "error_line", "first_line"]
