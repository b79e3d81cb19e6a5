"""The record of one subgraph's conversion and build (`EngineBuild`): where it stopped, how
long each step took, what Torch-TensorRT said, and the serialized engine when it was built.

`convert_and_build` (engine_builder.py) makes it; the build cache (hierviz/building/engine_store.py)
stores it and reads it back.
"""

from __future__ import annotations

from dataclasses import dataclass

from hierviz.trt.engine_file import EngineFile


@dataclass(frozen=True)
class EngineBuild:
    """What converting and building one subgraph gave.

    `stage`: "convert" (a converter failed), "build" (TensorRT's builder failed) or "built".
    `exception`: the class name of what Torch-TensorRT raises there ("RuntimeError" for a
    builder that returns no engine, as `TRTInterpreter.run` raises); `error`: the informative
    line of what it said (error_line, at most 200 characters: for a conversion, the error
    TensorRT logged where it logged one naming an Error Code, a CHECK or an Exception, else the
    exception's), `error_cut`: that line was cut to fit (so it matches a longer one as far as it
    goes), `details`: the whole text (the errors logged and the exception's message, or
    every error TensorRT logged). The serialized engine (built only) is
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
    error_cut: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.warnings, tuple):  # a list read back from JSON
            object.__setattr__(self, "warnings", tuple(self.warnings))

    @property
    def engine_bytes(self) -> int | None:
        return len(self.engine) if self.engine is not None else self.engine_size


__all__ = ["EngineBuild"]
