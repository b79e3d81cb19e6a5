"""Built engines kept on disk, so that a second `part.build()`, in any process, reads them back
without importing torch_tensorrt.

An entry is keyed by a SHA-256 over
  - the subgraph's content: its ops and their arguments (node names left out), the shape and
    dtype of each input (`meta['val']`, what Torch-TensorRT builds the engine's inputs from),
    the weights' shapes, dtypes and values (an engine holds its weights);
  - the conversion settings (the user's trt_settings, and TF32 on or off);
  - the installed torch, Torch-TensorRT and TensorRT versions (read from their metadata).
It holds what the build gave (`EngineBuild`'s fields, as JSON), the serialized engine and
what Torch-TensorRT's runtime module needs beside it (binding names, flags), so that on a GPU
hv.measure and part.compile() load a built engine instead of building it again
(`stored_engine`). The folder is the capture cache's (`hierviz cache clear` empties both); HIERVIZ_CACHE=0
turns it off. It is bounded like the capture cache: the least recently used entries go first.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

import torch

from hierviz.capturing import disk_cache as capture_cache
from hierviz.capturing.graph_codec import fetch_attr
from hierviz.foundation.digests import digest, tensor_digest, tensor_digests, tensor_key
from hierviz.trt.engine_builder import EngineBuild
from hierviz.trt.loading import installed_distribution, library_version
from hierviz.trt.compilation_settings import conversion_fields, settings_digest

KEY_VERSION = "hierviz-build-v1"
FOLDER = "builds"


def _value(value: Any) -> Any:
    """What Torch-TensorRT reads of an input's recorded value: shape (symbols by name) and dtype."""
    if isinstance(value, torch.Tensor):
        return ("T", tuple(str(d) for d in value.shape), str(value.dtype))
    if isinstance(value, torch.SymInt):
        return ("S", str(value))
    return ("O", repr(value))


def content_key(gm: torch.fx.GraphModule, seen: dict | None = None) -> tuple:
    """The subgraph's content: ops with their arguments (nodes by position), the inputs' shapes
    and dtypes, the weights by shape, dtype and values wherever an op reads them. Equal for
    equal subgraphs in every process, and on any device: where a weight's get_attr sits, its
    stride and device are left out, so the split module's submodule and hv.measure's rebuilt
    one (weights gathered first, on the GPU) share a key. `seen`: weight digests already taken
    during this build, by storage address, shape, stride, dtype and version (a split module's
    submodules hold other tensor objects over the graph's weights; all alive while it runs)."""
    index: dict[torch.fx.Node, Any] = {}
    rows: list[tuple] = []
    weights = [w for w in (fetch_attr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr")
               if isinstance(w, torch.Tensor)]
    if seen is None or any(_where(w) not in seen for w in weights):
        tensor_digests(weights)  # the big ones side by side; remembered for the loop below
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            value = fetch_attr(gm, n.target)
            index[n] = (("W", tuple(value.shape), str(value.dtype), _weight_digest(value, seen))
                        if isinstance(value, torch.Tensor) else ("A", repr(type(value))))
            continue
        index[n] = f"%{len(rows)}"
        if n.op == "placeholder":
            rows.append(("placeholder", _value(n.meta.get("val"))))
        elif n.op == "output":  # its values, flat: (x,) and ((x,),) return the same engine outputs
            leaves: list[Any] = []
            torch.fx.node.map_arg(n.args, lambda a: leaves.append(index[a]))
            rows.append(("output", repr(leaves)))
        else:
            target = n.target if isinstance(n.target, str) else f"{getattr(n.target, '__module__', '')}." \
                                                                  f"{getattr(n.target, '__qualname__', n.target)}"
            args = torch.fx.node.map_arg((n.args, n.kwargs), lambda a: index[a])
            rows.append((n.op, str(target), repr(args)))
    return tuple(rows)


def _where(t: torch.Tensor) -> tuple:
    return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype,
            t._version, t.device.type)


def _weight_digest(t: torch.Tensor, seen: dict | None) -> str:
    if seen is None:
        return tensor_digest(t)
    where = _where(t)
    if where not in seen:
        seen[where] = tensor_digest(t)
    return seen[where]


def run_key(gm: torch.fx.GraphModule, inputs: Any, seen: dict | None = None) -> str:
    """The store's key for running the lowered graph `gm` once in PyTorch on `inputs`."""
    values = tuple(tensor_digest(v) if isinstance(v, torch.Tensor) else repr(v) for v in inputs)
    return digest((KEY_VERSION, "run", content_key(gm, seen), tuple(map(tensor_key, inputs)), values,
                   torch.__version__))


def build_key(gm: torch.fx.GraphModule, trt_settings: Any, tf32: bool = False, seen: dict | None = None) -> str:
    """The store's key for building `gm` with these settings on this install: `trt_settings` as
    part.build() takes them (a dict or None, with `tf32`), or the CompilationSettings hv.measure
    converts with (its TF32 read from it)."""
    fields, on = conversion_fields(trt_settings)
    return digest((KEY_VERSION, content_key(gm, seen), settings_digest(fields), bool(tf32 or on), torch.__version__,
                   installed_distribution(), library_version()))


def stored_engine(gm: torch.fx.GraphModule, settings: Any) -> tuple[bytes, dict] | None:
    """(serialized engine, runtime record) that part.build() kept for `gm` with these settings
    (hv.measure's CompilationSettings), or None: what hv.measure and part.compile() load instead
    of building the engine again. None when the build cache is off."""
    if not capture_cache.enabled():
        return None
    store = EngineStore()
    key = build_key(gm, settings)
    found = store.load(key)
    if found is None or found.stage != "built":
        return None
    engine, runtime = store.engine(key), store.runtime(key)
    return None if engine is None or runtime is None else (engine, runtime)


class EngineStore:
    """The folder of built engines (`<key>.json` and `<key>.engine`), bounded by `max_bytes`."""

    def __init__(self, where: Path | None = None, max_bytes: int | None = None) -> None:
        self.folder = (where if where is not None else capture_cache.folder()) / FOLDER
        self.max_bytes = capture_cache.limit() if max_bytes is None else max_bytes

    def load(self, key: str) -> EngineBuild | None:
        """The build kept under `key` (its engine left on disk: `engine(key)` reads it), or None
        when there is none or it cannot be read (then it is removed)."""
        meta = self.folder / f"{key}.json"
        try:
            fields = json.loads(meta.read_text())
            if fields.pop("key", None) != key:
                raise ValueError("not this key's entry")
            if fields.pop("has_engine", False) and not (self.folder / f"{key}.engine").exists():
                raise ValueError("its engine file is gone")
            build = EngineBuild(**fields)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError):
            self.remove(key)
            return None
        for path in (meta, self.folder / f"{key}.engine"):
            try:
                os.utime(path)  # recently used: evicted last
            except OSError:
                pass
        return build

    def engine(self, key: str) -> bytes | None:
        """The serialized engine kept under `key`, or None."""
        try:
            return (self.folder / f"{key}.engine").read_bytes()
        except OSError:
            return None

    def runtime(self, key: str) -> dict | None:
        """What Torch-TensorRT's runtime module needs beside the engine kept under `key`, or None."""
        try:
            with open(self.folder / f"{key}.runtime", "rb") as f:
                value = pickle.load(f)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            return None
        return value if isinstance(value, dict) else None

    def load_run(self, key: str) -> tuple[bool, dict | None]:
        """(known, the run failure's fields or None) of a graph's run in PyTorch kept under `key`."""
        try:
            fields = json.loads((self.folder / f"run-{key}.json").read_text())
        except (OSError, ValueError):
            return False, None
        return True, fields.get("failure")

    def save_run(self, key: str, failure: dict | None) -> None:
        """Keep what running a graph in PyTorch gave (None: it ran) under `key`."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._write(self.folder / f"run-{key}.json", json.dumps({"failure": failure}, sort_keys=True).encode())
        except OSError:
            pass

    def save(self, key: str, build: EngineBuild) -> bool:
        """Keep `build` under `key` (the engine first, then its record, each atomically); then
        drop the least recently used entries beyond the bound. False when the folder cannot be
        written (not an error: the build is simply not kept)."""
        fields = {f.name: getattr(build, f.name) for f in dataclasses.fields(build)
                  if f.name not in ("engine", "runtime")}
        fields.update(key=key, has_engine=build.engine is not None, engine_size=build.engine_bytes)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if build.engine is not None:
                self._write(self.folder / f"{key}.engine", build.engine)
            if build.runtime is not None:
                runtime = pickle.dumps(build.runtime, protocol=pickle.HIGHEST_PROTOCOL)
                self._write(self.folder / f"{key}.runtime", runtime)
            self._write(self.folder / f"{key}.json", json.dumps(fields, sort_keys=True).encode())
        except OSError:
            return False
        self._prune()
        return True

    def _write(self, path: Path, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    def remove(self, key: str) -> None:
        for name in (f"{key}.json", f"{key}.engine", f"{key}.runtime", f"run-{key}.json"):
            try:
                (self.folder / name).unlink()
            except OSError:
                pass

    def builds(self) -> list[Path]:
        """The record of every build kept (one `<key>.json` each)."""
        try:
            return sorted(p for p in self.folder.glob("*.json") if not p.name.startswith(("run-", ".")))
        except OSError:
            return []

    def size(self) -> int:
        """The bytes the folder holds (engines, records, runs)."""
        try:
            return sum(p.stat().st_size for p in self.folder.iterdir())
        except OSError:
            return 0

    def clear(self) -> int:
        """Remove every entry (builds and runs); how many builds there were."""
        count = len(self.builds())
        try:
            for path in self.folder.iterdir():
                path.unlink()
        except OSError:
            pass
        return count

    def _prune(self) -> None:
        try:
            files = [(p.stat().st_mtime, p.stat().st_size, p) for p in self.folder.iterdir()
                     if not p.name.startswith(".")]
        except OSError:
            return
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files, key=lambda f: f[0]):
            if total <= self.max_bytes:
                break
            self.remove(path.stem.removeprefix("run-"))
            total -= size


__all__ = ["EngineStore", "build_key", "content_key", "run_key", "stored_engine", "KEY_VERSION"]
