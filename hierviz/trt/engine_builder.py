"""Converting a subgraph with Torch-TensorRT's converters and building its TensorRT engine,
with no GPU: the two steps `TRTInterpreter.run()` takes before it deserializes the engine
(which alone needs a GPU).

`convert_and_build(gm)` runs every converter of `gm` into a TensorRT network
(`TRTInterpreter._construct_trt_network_def`), then TensorRT's builder on it
(`builder.build_serialized_network`), and says where it stopped: `convert` (a converter
raised; the node it was converting), `build` (the builder returned no engine; TensorRT's own
error from its log), or `built` (the serialized engine). TensorRT-RTX builds ahead of time on
a CPU; standard TensorRT needs its GPU for a build.

The engine is streamed into a file as TensorRT serializes it (`build_serialized_network_to_stream`,
where the installed TensorRT has it): a 2.2 GB engine then never lies whole in memory beside the
builder's own copy of the weights. The build's `engine_file` is moved into the build cache by
the engine store, or deleted once dropped.
"""

from __future__ import annotations

import contextlib
import logging
import operator
import os
import re
import shutil
import tempfile
import threading
import time
import warnings
import weakref
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import torch

from hierviz.errors import BuildError, BuildInterrupted
from hierviz.foundation.torch_output import native_output
from hierviz.trt.loading import (FIX_DATACENTER, FIX_RTX, answer_cuda_queries, installed_distribution,
                                 installed_variant, library_version, require, tensorrt_library)
from hierviz.foundation.digests import data_hasher
from hierviz.foundation.error_text import OBJECT_ADDRESS as _OBJECT, first_line
from hierviz.trt.registry_lock import registry_held
from hierviz.trt.compilation_settings import conversion_settings

logger = logging.getLogger(__name__)

# One conversion at a time: converters and the builder share Torch-TensorRT's registry and
# TensorRT's logger, so two threads converting at once would read each other's errors.
_CONVERTING = threading.Lock()


TMP_PREFIX = ".tmp-"  # an engine being written (the engine store's name for a file not yet in place)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


class EngineFile:
    """A serialized engine that a build wrote to `path` (`size` bytes, SHA-256 `digest`, the
    one hierviz.foundation.digests.data_digest gives of its bytes). It is the caller's to move
    into place (`move_to`); a file never moved is deleted when the object is dropped."""

    def __init__(self, path: Path, size: int, digest: str) -> None:
        self.path, self.size, self.digest = path, size, digest
        self._delete = weakref.finalize(self, _unlink, path)

    def __repr__(self) -> str:
        return f"EngineFile({str(self.path)!r}, {self.size} bytes)"

    @property
    def kept(self) -> bool:
        """Whether the file is still this object's (neither moved nor deleted)."""
        return self._delete.alive

    def move_to(self, destination: Path) -> None:
        """Move the engine to `destination` (a rename within one filesystem, else a copy)."""
        try:
            os.replace(self.path, destination)
        except OSError:
            if not self.path.exists():
                raise
            shutil.move(self.path, destination)  # another filesystem: copied, then removed
        self._delete.detach()
        self.path = destination

    def discard(self) -> None:
        """Delete the file now (it is not kept)."""
        self._delete()


@dataclass(frozen=True)
class EngineBuild:
    """What converting and building one subgraph gave.

    `stage`: "convert" (a converter failed), "build" (TensorRT's builder failed) or "built".
    `exception`: the class name of what Torch-TensorRT raises there ("RuntimeError" for a
    builder that returns no engine, as `TRTInterpreter.run` raises); `error`: the informative
    line of what it said (error_line, at most 200 characters), `details`: the whole text (the
    exception's message, or every error TensorRT logged). The serialized engine (built only) is
    `engine_file` (written to a file as it was built) or `engine` (in memory, from a TensorRT
    without the stream API); neither when read back from the build cache, which keeps it on disk;
    `engine_size` its length. `warnings`: what Torch-TensorRT warned while it converted and built, each once (held
    back from stderr)."""

    stage: str
    layers: int | None
    convert_s: float
    build_s: float | None
    node: str | None = None
    exception: str | None = None
    error: str | None = None
    engine: bytes | None = None
    engine_size: int | None = None
    engine_file: EngineFile | None = None
    runtime: dict | None = None  # what Torch-TensorRT's runtime module needs beside the engine (built only)
    details: str | None = None
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.warnings, tuple):  # a list read back from JSON
            object.__setattr__(self, "warnings", tuple(self.warnings))

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




ERROR_LINE_LIMIT = 200

# pybind's "f(): incompatible function arguments. The following argument types are supported: ... Invoked with: ..."
_PYBIND = re.compile(r"^(?P<function>[\w.]*\(\)): incompatible function arguments\..*?Invoked with:\s*(?P<args>.*)",
                     re.DOTALL)
# A Myelin (or other TensorRT) check: 'operand.cpp:156: CHECK(...) failed. ...', its file:line kept
_CHECK = re.compile(r"(?:[\w./-]+:\d+:\s*)?CHECK\(")


def error_line(error: BaseException | str) -> str:
    """The informative line of an error (an exception, 'TypeName: ...', or a message), at most
    200 characters, object addresses left out: for pybind's incompatible function arguments the
    function and what it was invoked with; for a failed CHECK (Myelin's), the message's head and
    the CHECK with its file:line; else the first line."""
    if isinstance(error, BaseException):
        text = f"{type(error).__name__}: {error}".strip() if str(error).strip() else type(error).__name__
    else:
        text = error.strip()
    prefix, _, rest = text.partition(": ")
    if not re.fullmatch(r"\w+", prefix):
        prefix, rest = "", text
    pybind = _PYBIND.search(rest)
    check = _CHECK.search(rest)
    if pybind:
        line = f"{pybind['function']}: incompatible function arguments; invoked with: {pybind['args']}"
    elif check:
        head = rest[:check.start()].split(" (")[0].split(" [")[0].rstrip(" :(")
        line = f"{head} ({rest[check.start():]}" if head else rest[check.start():]
    else:
        line = rest.splitlines()[0] if rest else ""
    line = " ".join(_OBJECT.sub(r"<\1>", line).split())
    line = f"{prefix}: {line}" if prefix and line else prefix or line
    return line if len(line) <= ERROR_LINE_LIMIT else line[:ERROR_LINE_LIMIT - 1].rstrip() + "…"


def _details(error: BaseException | list[str]) -> str:
    """The whole text of an error (an exception, or TensorRT's logged errors), addresses left out."""
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else "\n".join(error)
    return _OBJECT.sub(r"<\1>", text.strip())


# TensorRT's logged out-of-memory errors: its OutOfMemory and allocation-failure codes, CUDA's
# "out of memory", the host allocator's "heap memory may be exhausted" and "could not be allocated".
_OUT_OF_MEMORY = re.compile(r"out ?of ?memory|Error Code 5\b|FAILED_ALLOCATION|could not be allocated|"
                            r"heap memory may be exhausted|bad_alloc", re.IGNORECASE)
_PACKAGE = str(Path(__file__).resolve().parent.parent)  # hierviz's own code
_OURS = (AttributeError, ImportError, NameError, TypeError)


def _ours(exc: BaseException) -> bool:
    """Whether `exc` is hierviz's own error calling Torch-TensorRT (a private API that moved): an
    AttributeError, ImportError, NameError or TypeError raised in hierviz's code, not in a converter."""
    if not isinstance(exc, _OURS):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and str(Path(tb.tb_frame.f_code.co_filename).resolve()).startswith(_PACKAGE)


def _not_supported(exc: BaseException) -> BuildError:
    """The BuildError for hierviz failing to call the installed Torch-TensorRT."""
    name, version = installed_distribution() or ("torch-tensorrt", "?")
    api = "API"
    if isinstance(exc, AttributeError) and exc.name:
        owner = getattr(exc, "obj", None)
        owner_name = owner.__name__ if isinstance(owner, (type, ModuleType)) else type(owner).__name__
        api = f"{owner_name}.{exc.name}"
    elif isinstance(exc, ImportError):
        missing = re.search(r"cannot import name '(\w+)'", str(exc))
        api = ".".join(filter(None, (exc.name, missing[1] if missing else None))) or api
    elif isinstance(exc, NameError) and exc.name:
        api = exc.name
    elif re.match(r"[\w.<>]+\(\)", str(exc)):  # TypeError: 'TRTInterpreter.run() takes 1 positional argument ...'
        api = str(exc).split("()")[0]
    fix = FIX_RTX if installed_variant()[1] == "rtx" else FIX_DATACENTER
    return BuildError(f"part.build(): hierviz could not call {name} {version}'s {api} ({first_line(exc)}): this "
                      f"Torch-TensorRT is not the one hierviz supports (2.14); `{fix}` installs it. Nothing was "
                      "stored.")


def _weights(gm: torch.fx.GraphModule) -> str:
    """The size of the subgraph's weights in words ('1.1 GB'), for an out-of-memory message."""
    total = 0
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            try:
                value = operator.attrgetter(str(n.target))(gm)
            except AttributeError:
                continue
            if isinstance(value, torch.Tensor):
                total += value.numel() * value.element_size()
    return f"{total / 1e9:.1f} GB" if total >= 1e8 else f"{total / 1e6:.1f} MB" if total >= 1e5 else f"{total} bytes"


def _out_of_memory(doing: str, gm: torch.fx.GraphModule, said: str) -> BuildError:
    return BuildError(f"part.build(): out of memory while {doing} ({_weights(gm)} of weights; {said}): free memory "
                      "or build a smaller part (torch_executed_ops, or a smaller model), then build() again; nothing "
                      "was stored")


@contextlib.contextmanager
def _not_the_subgraphs(doing: str, gm: torch.fx.GraphModule) -> Iterator[None]:
    """Out of memory and an interrupt while `doing` raise BuildError: the machine's, not the subgraph's."""
    try:
        yield
    except KeyboardInterrupt as exc:
        raise BuildInterrupted(f"part.build(): interrupted while {doing}; nothing of it was stored (engines "
                               "built before are kept in the build cache): call build() again to go on") from exc
    except (MemoryError, torch.OutOfMemoryError) as exc:
        raise _out_of_memory(doing, gm, first_line(exc)) from exc


def convert_and_build(gm: torch.fx.GraphModule, settings: Any = None, *, label: str = "",
                      engine_folder: Path | None = None) -> EngineBuild:
    """Convert `gm` (a `_run_on_acc_tensorrt_*` submodule, named `label`) with Torch-TensorRT's
    converters and build its engine, as `torch_tensorrt.compile` does (inputs from the
    placeholders' `meta['val']`, the settings hv.measure converts with), without deserializing
    it. What the subgraph does (a converter raising, the builder giving no engine) is the answer;
    what is not its doing (out of memory, an interrupt, hierviz failing to call Torch-TensorRT)
    raises BuildError. Torch-TensorRT's warnings are held back, on `.warnings`. The engine is
    written into a temp file in `engine_folder` (the build cache's, so that moving it there is a
    rename; the system's temp folder when None): `.engine_file`."""
    require()
    try:
        from torch_tensorrt.dynamo import CompilationSettings
        from torch_tensorrt.dynamo.conversion._conversion import infer_module_output_dtypes
        from torch_tensorrt.dynamo.conversion._symbolic_shape_capture import extract_symbolic_shape_expressions
        from torch_tensorrt.dynamo.conversion._TRTInterpreter import TRTInterpreter
        from torch_tensorrt.dynamo.partitioning import construct_submodule_inputs
        from torch_tensorrt.logging import TRT_LOGGER
    except ImportError as exc:
        raise _not_supported(exc) from exc

    if not isinstance(settings, CompilationSettings):
        settings = conversion_settings(settings)
    name = label or "the subgraph"
    with _CONVERTING, registry_held(), answer_cuda_queries(), _quiet() as held, \
            warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")  # every warning recorded (deduplicated below), none printed
        start = time.perf_counter()
        interpreter = None
        try:
            with _not_the_subgraphs(f"Torch-TensorRT converted {name}", gm):
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
            if _ours(exc):
                raise _not_supported(exc) from exc
            logger.debug("Torch-TensorRT could not convert the subgraph", exc_info=True)
            node = getattr(interpreter, "_cur_node_name", None) if interpreter is not None else None
            return EngineBuild("convert", None, time.perf_counter() - start, None, node=node,
                               exception=type(exc).__name__, error=error_line(exc),
                               details=_details([*held.lines, _details(exc)]),
                               warnings=_said(heard))
        convert_s = time.perf_counter() - start
        layers = int(interpreter.ctx.net.num_layers)
        start = time.perf_counter()
        doing = f"TensorRT built {name}"
        try:
            with _not_the_subgraphs(doing, gm), _ErrorLog(TRT_LOGGER) as log, native_output() as printed:
                config = interpreter._populate_trt_builder_config(False, None)
                serialized = _build(interpreter.builder, interpreter.ctx.net, config, engine_folder)
        except BuildError:
            raise
        except Exception as exc:  # what TensorRT's builder raised is the answer
            if _ours(exc):
                raise _not_supported(exc) from exc
            logger.debug("TensorRT could not build the engine", exc_info=True)
            return EngineBuild("build", layers, convert_s, time.perf_counter() - start, exception=type(exc).__name__,
                               error=error_line(exc), details=_details(exc), warnings=_said(heard))
        build_s = time.perf_counter() - start
        if serialized is None:
            # named as upstream's build (build_serialized_network) names itself: the stream is hierviz's doing
            errors = [e.replace("buildSerializedNetworkToStream", "buildSerializedNetwork")
                      for e in log.errors or printed if e.strip()]
            memory = next((e for e in errors if _OUT_OF_MEMORY.search(e)), None)
            if memory is not None:
                raise _out_of_memory(doing, gm, error_line(memory))
            said = _tensorrt_error(errors)
            return EngineBuild("build", layers, convert_s, build_s, exception="RuntimeError",
                               error=error_line(said) if said else
                               "TensorRT build_serialized_network returned None; engine build failed.",
                               details=_details([*held.lines, *errors]) or None, warnings=_said(heard))
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
        return EngineBuild("built", layers, convert_s, build_s, engine=engine, runtime=runtime,
                           warnings=_said(heard) + tuple(dict.fromkeys(f"logged an error: {e}" for e in held.lines)),
                           engine_file=engine_file, engine_size=engine_file.size if engine_file is not None else None)


def _build(builder: Any, net: Any, config: Any, folder: Path | None) -> Any:
    """TensorRT's build of `net`: an EngineFile written into `folder` (the system's temp folder
    when None) as it is serialized, where the builder has the stream API and the folder can be
    written; else the builder's serialized engine in memory. None when the builder gives no
    engine (no file is left then, nor on an error or an interrupt)."""
    stream = getattr(builder, "build_serialized_network_to_stream", None)
    where = Path(folder) if folder is not None else Path(tempfile.gettempdir())
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError:
        stream = None
    if stream is None or not os.access(where, os.W_OK | os.X_OK):
        return builder.build_serialized_network(net, config)
    writer = _writer(where)
    try:
        built = stream(net, config, writer)
        writer.close()
        if isinstance(writer.failed, OSError):
            raise BuildError(f"part.build(): the engine could not be written to {where} ({writer.failed}): free "
                             "disk space there (or set HIERVIZ_CACHE_DIR to another folder), then build() again; "
                             "nothing was stored") from writer.failed
        if writer.failed is not None:
            raise writer.failed
    except BaseException:
        writer.remove()
        raise
    if not built or writer.path is None:
        writer.remove()
        return None
    return EngineFile(writer.path, writer.size, writer.sha256.hexdigest())


def _writer(folder: Path) -> Any:
    """A TensorRT stream writer into a new temp file in `folder` (made at the first write, so
    that none is there while the builder works, nor after a build that wrote nothing), hashing
    what it writes (the digest data_digest gives of the whole). What writing raises is kept on
    `.failed` (TensorRT is told nothing was written and stops), to be raised once the builder
    returns."""
    trt = tensorrt_library()

    class Writer(trt.IStreamWriter):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            trt.IStreamWriter.__init__(self)
            self.path: Path | None = None
            self.file: Any = None
            self.size = 0
            self.sha256 = data_hasher()
            self.failed: BaseException | None = None

        def write(self, data: Any) -> int:
            if self.failed is not None:
                return 0
            try:
                if self.file is None:
                    fd, name = tempfile.mkstemp(dir=folder, prefix=TMP_PREFIX, suffix=".engine")
                    self.path, self.file = Path(name), open(fd, "wb")
                self.file.write(data)
                self.sha256.update(data)
            except (OSError, MemoryError, KeyboardInterrupt) as exc:  # raised here it would cross TensorRT's C++ frames
                self.failed = exc
                return 0
            self.size += len(data)
            return len(data)

        def close(self) -> None:
            if self.file is not None:
                self.file.close()

        def remove(self) -> None:
            self.close()
            if self.path is not None:
                _unlink(self.path)

    return Writer()


def _said(heard: list[warnings.WarningMessage]) -> tuple[str, ...]:
    """The warnings' texts, each once, in the order first heard, addresses left out."""
    return tuple(dict.fromkeys(" ".join(_OBJECT.sub(r"<\1>", str(w.message)).split()) for w in heard))


# TensorRT's report of a failed CUDA runtime call ("Error Code 1: Cuda Runtime (... cudaError 35:
# CUDA driver version is insufficient ...)")
_CUDA_RUNTIME = re.compile(r"Cuda Runtime|cudaError", re.IGNORECASE)


def _tensorrt_error(errors: list[str]) -> str:
    """The most telling of TensorRT's logged errors, on one line: the last that names a failed
    check (an exception, a CHECK), else the last with an error code. A CUDA runtime error comes
    last among them: a build that fails logs one after the builder's own error on a machine
    whose driver cannot run CUDA (TensorRT-RTX on a CPU), and it says nothing of the network."""
    lines = [" ".join(e.split()) for e in errors if e.strip()]
    candidates = [line for line in lines if not _CUDA_RUNTIME.search(line)] or lines
    for words in (("Exception", "CHECK"), ("Error Code",)):
        for line in reversed(candidates):
            if any(w in line for w in words):
                return line
    return candidates[-1] if candidates else ""


class _quiet(logging.Handler):
    """Torch-TensorRT's logging held back while it converts and builds: INFO/WARNING dropped (it
    logs every layer), errors kept in `lines` for the build's details (a failure's row says
    them) or, when it built anyway, its warnings; nothing reaches stderr."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def __enter__(self) -> "_quiet":
        self.saved = [(logger, logger.level, logger.propagate) for logger in map(logging.getLogger, _TRT_LOGGERS)]
        for logger, level, _ in self.saved:
            logger.setLevel(max(level, logging.ERROR))
            logger.propagate = False
            logger.addHandler(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        for logger, level, propagate in self.saved:
            logger.removeHandler(self)
            logger.setLevel(level)
            logger.propagate = propagate


# Torch-TensorRT's loggers: its own, and the one TensorRT's messages go through while it converts
# (not a child of the first: its name has no dot)
_TRT_LOGGERS = ("torch_tensorrt", "torch_tensorrt [TensorRT Conversion Context]")


__all__ = ["EngineBuild", "EngineFile", "TMP_PREFIX", "builder_name", "builds_without_gpu", "convert_and_build",
           "error_line", "first_line"]
