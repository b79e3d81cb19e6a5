"""Building each TensorRT subgraph of a partition, and running its graph in PyTorch first,
through the engine store.

`SubgraphBuilder.build(gm)` converts and builds one `_run_on_acc_tensorrt_*` submodule of a
partition's split module: from the store when this content was built before with these
settings on this install (no torch_tensorrt import then), else with Torch-TensorRT and
TensorRT (`hierviz.trt.convert_and_build`), kept in the store after.

`between_builds(callback)`: `callback()` runs before every conversion and build in this
thread (between engines, and between a fix search's candidates), so a caller can let other
work run there (the explorer's worker runs a waiting measurement alone), or stop the build
by raising.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Iterator

from hierviz import trt

from hierviz.foundation import cache_folder
from hierviz.building.build_keys import build_key, run_key
from hierviz.building.engine_store import EngineStore
from hierviz.building.graph_run import RunFailure, first_failure_in_profile
from hierviz.errors import TensorRTUnavailableError

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.partition_result import Partition

TENSORRT = "tensorrt"
WARNED = "Torch-TensorRT warned: "  # how a build's held-back warning starts in Builds.notes
_BETWEEN: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar("between_builds", default=None)


@contextlib.contextmanager
def between_builds(callback: Callable[[], None]) -> Iterator[None]:
    """Run `callback()` before each conversion and build started in this context (see the
    module docstring); what it raises ends the build and is never stored."""
    token = _BETWEEN.set(callback)
    try:
        yield
    finally:
        _BETWEEN.reset(token)


def tensorrt_tags(part: "Partition") -> list[str]:
    """The tags of the partition's TensorRT subgraphs, in order."""
    return [sg.tag for sg in part.subgraphs if sg.backend == TENSORRT]


def no_builder() -> str | None:
    """Why no engine can be built here, in one line; None when one can."""
    if trt.installed_distribution() is None or trt.library_version() is None:
        return (f"no TensorRT builder is installed, so no engine is built: `{trt.FIX_RTX}` builds them on "
                f"a CPU, `{trt.FIX_DATACENTER}` on a GPU")
    if not trt.builds_without_gpu():
        import torch

        if not torch.cuda.is_available():
            return (f"standard TensorRT builds engines on its GPU and this machine has none: `{trt.FIX_RTX}` "
                    "builds them ahead of time on the CPU")
    return None


class SubgraphBuilder:
    """Builds subgraphs with one set of settings, each content once per builder (in memory)
    and once per install (the disk store)."""

    def __init__(self, trt_settings: Any = None, tf32: bool = False, cache: bool = True) -> None:
        self.trt_settings = trt_settings
        self.tf32 = tf32
        self.store = EngineStore() if cache_folder.enabled(cache) else None
        self._seen: dict[str, tuple[trt.EngineBuild, bool]] = {}
        self._settings: Any = None
        self._warnings: dict[str, None] = {}  # Torch-TensorRT's warnings, in the order first seen
        self.made = 0  # builder calls (conversions and builds run, not read from a cache)
        self.from_store = 0  # builds read from the build cache on disk

    def run(self, graph: Any, inputs: Any) -> RunFailure | None:
        """The first node of `graph` that fails when run in PyTorch on `inputs`, or None; kept in
        the store, so a graph run once is not run again."""
        key = run_key(graph, inputs) if self.store is not None else None
        if key is not None and self.store is not None:
            known, fields = self.store.load_run(key)
            if known:
                return None if fields is None else RunFailure(**fields)
        failure = first_failure_in_profile(graph, inputs)
        if key is not None and self.store is not None:
            self.store.save_run(key, None if failure is None else dataclasses.asdict(failure))
        return failure

    def notes(self) -> tuple[str, ...]:
        """What a user should know of these builds beyond their rows: the build cache's notes (an
        engine too big to keep) and Torch-TensorRT's warnings, each once, held back while it
        converted (`--verbose` shows them)."""
        said = list(self.store.notes) if self.store is not None else []
        said += [f"{WARNED}{w}" for w in self._warnings]
        return tuple(dict.fromkeys(said))

    def _heard(self, made: trt.EngineBuild) -> None:
        for text in made.warnings:
            self._warnings.setdefault(text, None)

    def build(self, gm: Any, label: str = "",
              alongside: Callable[[], Any] | None = None) -> tuple[trt.EngineBuild, bool]:
        """(what building `gm` gave, whether it came from the store); `label`: its tag, for notes.
        `alongside()` runs on a thread of its own while TensorRT builds the engine (convert_and_build
        says how); not for a build the store or this builder had, nor one whose conversion fails."""
        key = build_key(gm, self.trt_settings, self.tf32)
        if key in self._seen:
            return self._seen[key]
        found = self.store.load(key, label=label) if self.store is not None else None
        if found is not None:
            self.from_store += 1
            self._heard(found)
            self._seen[key] = (found, True)
            return self._seen[key]
        why = no_builder()
        if why is not None:
            raise TensorRTUnavailableError(f"part.build(): {why}.")
        if self._settings is None:
            self._settings = trt.conversion_settings(self.trt_settings, tf32=self.tf32)
        pause = _BETWEEN.get()
        if pause is not None:
            pause()
        made = trt.convert_and_build(gm, self._settings, label=label, alongside=alongside,
                                     engine_folder=self.store.folder if self.store is not None else None,
                                     wait_for_disk=self.store is None)  # else the cache finishes the write after
        self.made += 1
        self._heard(made)
        if self.store is not None:
            self.store.save(key, made, label=label)
        if made.engine is not None or made.engine_file is not None:  # kept on disk, or not at all: a build of
            made = dataclasses.replace(made, engine=None, engine_file=None,  # big engines holds none of them
                                       engine_size=made.engine_bytes)
        self._seen[key] = (made, False)
        return self._seen[key]


__all__ = ["SubgraphBuilder", "TENSORRT", "WARNED", "between_builds", "no_builder", "tensorrt_tags"]
