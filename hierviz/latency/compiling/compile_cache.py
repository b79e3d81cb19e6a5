"""The compile cache: compiled subgraphs keyed by structure, in memory and optionally on disk.

The key of a subgraph is a SHA-256 over
  - the ops of the lifted subgraph and their arguments (literals, dtypes, devices; node
    names are left out, so identical blocks of one model share a key),
  - the input specs: shape, stride, dtype, device type and storage offset of each input,
  - the weights' and constants' shapes, strides and dtypes,
  - the backend, its settings (for TensorRT a stable digest of the CompilationSettings), its
    version (for TensorRT also the TensorRT library's), the device (and GPU model), torch's
    version and torch's FP32 precision settings (TF32),
  - symbolic input shapes and their ranges, for dynamic captures,
  - for compilers that build weights into the artifact (TensorRT), a digest of the weights'
    values; compilers that take weights as inputs (TorchInductor) are keyed without them and
    their artifact is run with the weights of whichever partition uses it.

Compile failures are remembered too (in memory only), so a sweep does not retry them.

The cache is bounded (least recently used first out): by entries and by the bytes of TensorRT
engines it holds. `clear()` drops every entry and frees the GPU memory their engines held.

On disk (`cache_dir=`) each backend's artifacts are a hierviz.foundation.disk_store.DiskStore in
`<cache_dir>/<backend>/` (an entry in a subfolder named for its key's first two characters: its
artifact `<key>.bin` and its record `<key>.json`): written atomically through a temp file named
for its writer, checked when read (an artifact whose length or SHA-256 differs from its record is
one CacheWarning and compiled again: TorchInductor's artifacts are code, never loaded damaged), not
bounded (the folder is the caller's, as TorchInductor's own cache is). The temp files killed
writers left under a folder are removed the first time a process reads or writes there
(`remove_stale_temp`; a fresh one of another process is left alone).
"""

from __future__ import annotations

import gc
import logging
import platform
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from hierviz.settings.setting_values import whole_number
from hierviz.errors import ConfigError
from hierviz.foundation import temp_files
from hierviz.foundation.damaged_entry import DamagedEntry
from hierviz.foundation.disk_store import DiskStore
from hierviz.latency.compiling.backend_compilers import Compiler
from hierviz.latency.compiling.lift import Lifted, digest, graph_signature, tensor_digest, tensor_key
from hierviz.latency.precision import precision_key

logger = logging.getLogger(__name__)

KEY_VERSION = "hierviz-compile-v3"  # v3: the modules moved into packages (pickled class paths changed)
MAX_ENTRIES = 512
MAX_BYTES = 8 << 30  # serialized TensorRT engines held in memory


@dataclass
class Entry:
    """A compiled subgraph (or a remembered compile failure)."""

    key: str
    backend: str
    fn: Callable[..., Any] | None
    compile_s: float
    lifts_weights: bool
    error: str | None = None
    origin: str = "compiled"  # or "disk"
    first_tag: str = ""
    created: float = field(default_factory=time.time)
    nbytes: int = 0  # the serialized engine's size, for artifacts that report one

    @property
    def compiled(self) -> Callable[..., Any]:
        """The compiled function (every entry but a remembered failure holds one)."""
        if self.fn is None:
            raise RuntimeError(f"compile cache entry {self.key} is a remembered failure ({self.error}): no function")
        return self.fn


def _nbytes(fn: Any) -> int:
    blob = getattr(fn, "serialized_engine", None)  # a TorchTensorRTModule
    return len(blob) if isinstance(blob, (bytes, bytearray)) else 0


class CompileCache:
    """Compiled subgraphs by structural key, at most `max_entries` of them and `max_bytes` of
    engines, the least recently used dropped first. `hv.measure` uses one shared, process-wide
    instance unless given another; `clear()` empties it and frees the GPU memory it held."""

    def __init__(self, max_entries: int | None = MAX_ENTRIES, max_bytes: int | None = MAX_BYTES) -> None:
        for name, value in (("max_entries", max_entries), ("max_bytes", max_bytes)):
            if value is not None and not whole_number(value, 1):
                raise ConfigError(f"CompileCache({name}=...) must be a positive integer or None, not {value!r}")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    @property
    def nbytes(self) -> int:
        """Bytes of serialized engines held."""
        return sum(e.nbytes for e in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __repr__(self) -> str:
        return (f"<CompileCache {len(self)} entries ({self.nbytes / 2**20:.1f} MiB of engines), "
                f"{self.hits} hits, {self.misses} misses, {self.evictions} evicted>")

    def keys(self) -> list[str]:
        return list(self._entries)

    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    def clear(self) -> None:
        """Drop every entry and free what they held: the compiled artifacts are released, a
        garbage collection breaks their reference cycles, and CUDA's cached blocks go back to
        the GPU (TensorRT engines hold device memory until then)."""
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = self.evictions = 0
        release_memory()

    def get(self, key: str, compiler: Compiler, directory: Path | None = None) -> Entry | None:
        """The entry for `key` from memory, else from `directory`; None on a miss."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        if entry is None and directory is not None:
            entry = load_entry(key, compiler, directory)
            if entry is not None:
                self.put(entry)
        return entry

    def put(self, entry: Entry) -> None:
        if entry.fn is not None and not entry.nbytes:
            entry.nbytes = _nbytes(entry.fn)
        with self._lock:
            self._entries[entry.key] = entry
            self._entries.move_to_end(entry.key)
            evicted = 0
            while len(self._entries) > 1 and (
                    (self.max_entries is not None and len(self._entries) > self.max_entries)
                    or (self.max_bytes is not None and self.nbytes > self.max_bytes)):
                self._entries.popitem(last=False)
                evicted += 1
            self.evictions += evicted
        if evicted and torch.cuda.is_available():
            release_memory()

    def drop(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def count(self, hit: bool) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1


_DEFAULT = CompileCache()


def default_cache() -> CompileCache:
    """The process-wide compile cache."""
    return _DEFAULT


def clear_cache() -> None:
    """Empty the process-wide compile cache (e.g. after changing weights through `.data`) and
    free the GPU memory its engines held."""
    _DEFAULT.clear()


def release_memory() -> None:
    """Collect garbage (compiled modules sit in reference cycles) and return CUDA's cached
    blocks to the GPU."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------- keys
def device_key(device: torch.device) -> tuple:
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return ("cuda", index, torch.cuda.get_device_name(index),
                tuple(torch.cuda.get_device_capability(index)))
    if device.type == "cpu":  # generated code depends on the instruction set (a disk cache may be shared)
        try:
            isa = torch.backends.cpu.get_cpu_capability()
        except (AttributeError, RuntimeError):  # older torch
            isa = "?"
        return ("cpu", platform.machine(), isa)
    return (device.type,)


def cache_key(lifted: Lifted, inputs: Sequence[Any], compiler: Compiler, options: Any,
              device: torch.device) -> str:
    """The structural key of a subgraph compiled by `compiler` for `inputs` (see module doc)."""
    parts: list[Any] = [
        KEY_VERSION,
        compiler.backend,
        compiler.version(),
        compiler.options_key(options),
        device_key(device),
        precision_key(),
        lifted.single,
        graph_signature(lifted.gm),
        lifted.dynamic,
        tuple(tensor_key(x) for x in inputs),
        tuple(tensor_key(w) for w in lifted.weights),
    ]
    if not compiler.lifts_weights:
        parts.append(("weights", tuple(tensor_digest(s) for s in lifted.sources)))
    return digest(parts)


# ----------------------------------------------------------------------------- disk
ARTIFACT = ".bin"
_SWEPT: set[str] = set()  # folders whose stale temp files this process removed


def _store(directory: Path, backend: str) -> DiskStore:
    """The store of `backend`'s artifacts under `directory` (unbounded, not swept: `_swept`)."""
    return DiskStore(directory / backend, None, shard=2, sweep=False)


def remove_stale_temp(directory: Path) -> int:
    """Remove the temp files killed writers left under `directory` (every backend's folders,
    names of older hierviz versions too); how many were removed."""
    try:
        backends = [p for p in directory.iterdir() if p.is_dir()]
        older = list(directory.glob("*/*/tmp*.tmp"))
    except OSError:
        return 0
    return sum(_store(directory, b.name).sweep_temp() for b in backends) + temp_files.sweep(older)


def _swept(directory: Path) -> None:
    """`remove_stale_temp(directory)`, the first time this process uses it."""
    if str(directory) not in _SWEPT:
        _SWEPT.add(str(directory))
        remove_stale_temp(directory)


def load_entry(key: str, compiler: Compiler, directory: Path) -> Entry | None:
    """The entry kept for `key` under `directory`, or None (none, damaged: removed with a
    CacheWarning, or not loadable by this process's compiler: compiled again)."""
    _swept(directory)
    if compiler.load is None:
        return None
    store = _store(directory, compiler.backend)
    try:
        meta = store.get(key)
        artifact = store.checked_path(key, ARTIFACT) if meta is not None else None
    except DamagedEntry as exc:
        store.damaged(key, f"hv.measure: the cached {compiler.backend} artifact {store.path(key, '.*')} is damaged "
                           f"({exc.why}); it is removed and compiled again.")
        return None
    if meta is None or artifact is None:
        return None
    try:
        fn = compiler.load(artifact)
    except Exception:  # the compiler's own loader: an artifact of another version is a miss, not an error
        logger.debug("%s could not be loaded; compiling again", artifact, exc_info=True)
        return None
    return Entry(key=key, backend=compiler.backend, fn=fn, compile_s=float(meta.get("compile_s", 0.0)),
                 lifts_weights=compiler.lifts_weights, origin="disk", first_tag=meta.get("tag", ""))


def save_entry(entry: Entry, artifact: Any, compiler: Compiler, directory: Path) -> str | None:
    """Write a compiled artifact under `directory`; returns why not, or None when written."""
    save = compiler.save
    if save is None:
        return f"the {compiler.backend} compiler cannot save its artifacts"
    _swept(directory)
    meta = {"key": entry.key, "backend": entry.backend, "tag": entry.first_tag, "compile_s": entry.compile_s,
            "created": entry.created, "version": compiler.version(), "torch": torch.__version__}
    store = _store(directory, compiler.backend)
    try:
        if not store.put(entry.key, meta, {ARTIFACT: lambda path: save(artifact, path)}):
            return f"this {compiler.backend} artifact cannot be saved"
    except Exception as exc:  # the compiler's own saver: the in-memory entry still works; the caller warns
        logger.debug("%s could not be saved", store.path(entry.key, ARTIFACT), exc_info=True)
        return f"{type(exc).__name__}: {exc}"
    return None


__all__ = ["CompileCache", "Entry", "cache_key", "default_cache", "clear_cache", "release_memory", "KEY_VERSION",
           "MAX_ENTRIES", "MAX_BYTES", "remove_stale_temp"]
