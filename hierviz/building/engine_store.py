"""Built engines kept on disk, so that a second `part.build()`, in any process, reads them back
without importing torch_tensorrt.

An entry is keyed as `build_keys` says (content, settings, versions).
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
from hierviz.building.build_keys import build_key
from hierviz.trt.engine_builder import EngineBuild

FOLDER = "builds"


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


__all__ = ["EngineStore", "stored_engine"]
