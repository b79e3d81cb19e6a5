"""Converting a subgraph with Torch-TensorRT's converters and building its TensorRT engine,
with no GPU: the two steps `TRTInterpreter.run()` takes before it deserializes the engine
(which alone needs a GPU).

`convert_and_build(gm)` runs every converter of `gm` into a TensorRT network
(`TRTInterpreter._construct_trt_network_def`), then TensorRT's builder on it
(`builder.build_serialized_network`), and says where it stopped: `convert` (a converter
raised; the node it was converting), `build` (the builder returned no engine; TensorRT's own
error from its log), or `built` (the serialized engine). TensorRT-RTX builds ahead of time on
a CPU; standard TensorRT needs its GPU for a build.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

import torch

from hierviz.foundation.torch_output import native_output
from hierviz.trt.loading import answer_cuda_queries, installed_variant, library_version, require, tensorrt_library
from hierviz.trt.partitioners import registry_held
from hierviz.trt.compilation_settings import conversion_settings

logger = logging.getLogger(__name__)

# One conversion at a time: converters and the builder share Torch-TensorRT's registry and
# TensorRT's logger, so two threads converting at once would read each other's errors.
_CONVERTING = threading.Lock()


@dataclass(frozen=True)
class EngineBuild:
    """What converting and building one subgraph gave.

    `stage`: "convert" (a converter failed), "build" (TensorRT's builder failed) or "built".
    `exception`: the class name of what Torch-TensorRT raises there ("RuntimeError" for a
    builder that returns no engine, as `TRTInterpreter.run` raises); `error`: its first line.
    `engine`: the serialized engine (built only; None when read back from the build cache,
    which keeps it on disk), `engine_size` its length."""

    stage: str
    layers: int | None
    convert_s: float
    build_s: float | None
    node: str | None = None
    exception: str | None = None
    error: str | None = None
    engine: bytes | None = None
    engine_size: int | None = None
    runtime: dict | None = None  # what Torch-TensorRT's runtime module needs beside the engine (built only)

    @property
    def engine_bytes(self) -> int | None:
        return len(self.engine) if self.engine is not None else self.engine_size


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


class _ErrorLog:
    """TensorRT's logger, its errors kept while a build runs (the builder returns None and
    says why only through its logger)."""

    def __init__(self, logger: Any) -> None:
        self.logger = logger
        self.errors: list[str] = []
        self._log = logger.log

    def __enter__(self) -> "_ErrorLog":
        trt = tensorrt_library()
        errors, log = self.errors, self._log

        def kept(severity: Any, msg: str) -> None:
            if severity in (trt.ILogger.Severity.ERROR, trt.ILogger.Severity.INTERNAL_ERROR):
                errors.append(str(msg))
            else:
                log(severity, msg)

        self.logger.log = kept
        return self

    def __exit__(self, *exc: Any) -> None:
        self.logger.log = self._log


# '<tensorrt_rtx_bindings.tensorrt_rtx.ITensor object at 0x7f88...>' -> '<ITensor>': the same text in every process
_OBJECT = re.compile(r"<(?:[\w.]+\.)?(\w+) object at 0x[0-9a-fA-F]+>")


def first_line(exc: BaseException | str) -> str:
    """'TypeName: first line' of an exception (or the first line of a message), with object
    addresses left out."""
    if isinstance(exc, str):
        lines = exc.strip().splitlines()
        return _OBJECT.sub(r"<\1>", lines[0]) if lines else ""
    text = str(exc).strip()
    head = _OBJECT.sub(r"<\1>", text.splitlines()[0]) if text else ""
    return f"{type(exc).__name__}: {head}" if head else type(exc).__name__


def convert_and_build(gm: torch.fx.GraphModule, settings: Any = None) -> EngineBuild:
    """Convert `gm` (a `_run_on_acc_tensorrt_*` submodule) with Torch-TensorRT's converters and
    build its engine, as `torch_tensorrt.compile` does (inputs from the placeholders'
    `meta['val']`, the settings hv.measure converts with), without deserializing it."""
    require()
    from torch_tensorrt.dynamo import CompilationSettings
    from torch_tensorrt.dynamo.conversion._conversion import infer_module_output_dtypes
    from torch_tensorrt.dynamo.conversion._symbolic_shape_capture import extract_symbolic_shape_expressions
    from torch_tensorrt.dynamo.conversion._TRTInterpreter import TRTInterpreter
    from torch_tensorrt.dynamo.partitioning import construct_submodule_inputs
    from torch_tensorrt.logging import TRT_LOGGER

    if not isinstance(settings, CompilationSettings):
        settings = conversion_settings(settings)
    with _CONVERTING, registry_held(), answer_cuda_queries(), _quiet():  # registry: never beside a validation
        start = time.perf_counter()
        interpreter = None
        try:
            inputs = list(construct_submodule_inputs(gm))
            dtypes = infer_module_output_dtypes(gm, truncate_double=settings.truncate_double)
            interpreter = TRTInterpreter(gm, inputs, output_dtypes=dtypes, compilation_settings=settings)
            interpreter._construct_trt_network_def()
        except Exception as exc:  # what a converter raised is the answer
            logger.debug("Torch-TensorRT could not convert the subgraph", exc_info=True)
            node = getattr(interpreter, "_cur_node_name", None) if interpreter is not None else None
            return EngineBuild("convert", None, time.perf_counter() - start, None, node=node,
                               exception=type(exc).__name__, error=first_line(exc))
        convert_s = time.perf_counter() - start
        layers = int(interpreter.ctx.net.num_layers)
        start = time.perf_counter()
        try:
            with _ErrorLog(TRT_LOGGER) as log, native_output() as printed:
                config = interpreter._populate_trt_builder_config(False, None)
                serialized = interpreter.builder.build_serialized_network(interpreter.ctx.net, config)
        except Exception as exc:  # what TensorRT's builder raised is the answer
            logger.debug("TensorRT could not build the engine", exc_info=True)
            return EngineBuild("build", layers, convert_s, time.perf_counter() - start,
                               exception=type(exc).__name__, error=first_line(exc))
        build_s = time.perf_counter() - start
        if serialized is None:
            said = _tensorrt_error(log.errors or printed)
            return EngineBuild("build", layers, convert_s, build_s, exception="RuntimeError",
                               error=said or "TensorRT build_serialized_network returned None; engine build failed.")
        engine = bytes(memoryview(serialized))
        runtime = {"input_binding_names": list(interpreter._input_names),
                   "output_binding_names": list(interpreter._output_names),
                   "requires_output_allocator": bool(interpreter.ctx.requires_output_allocator),
                   "requires_native_multidevice": bool(getattr(interpreter.ctx, "requires_native_multidevice", False)),
                   "aliased_io": dict(interpreter._aliased_io),
                   "symbolic_shape_expressions": extract_symbolic_shape_expressions(gm)}
        del interpreter
        return EngineBuild("built", layers, convert_s, build_s, engine=engine, runtime=runtime)


def _tensorrt_error(errors: list[str]) -> str:
    """The most telling of TensorRT's logged errors, on one line: the last that names a check."""
    lines = [" ".join(e.split()) for e in errors if e.strip()]
    for line in reversed(lines):
        if "Exception" in line or "CHECK" in line or "Error Code" in line:
            return line[:400]
    return lines[-1][:400] if lines else ""


class _quiet:
    """Torch-TensorRT's INFO/WARNING logging held back while it converts (it logs every
    layer); errors still show."""

    def __enter__(self) -> None:
        self.logger = logging.getLogger("torch_tensorrt")
        self.level = self.logger.level
        self.logger.setLevel(max(self.level, logging.ERROR))

    def __exit__(self, *exc: Any) -> None:
        self.logger.setLevel(self.level)


__all__ = ["EngineBuild", "builder_name", "builds_without_gpu", "convert_and_build", "first_line"]
