"""Built engines kept on disk, so that a second `part.build()`, in any process, reads them back
without importing torch_tensorrt.

An entry is keyed as `build_keys` says (content, settings, versions).
It holds what the build gave (`EngineBuild`'s fields, as JSON), the serialized engine and
what Torch-TensorRT's runtime module needs beside it (binding names, flags), so that on a GPU
hv.measure and part.compile() load a built engine instead of building it again
(`stored_engine`). It is a hierviz.foundation.disk_store.DiskStore in `builds/` of hierviz's
cache folder (hierviz.foundation.cache_folder, beside the capture cache's: `hierviz cache clear`
empties both); HIERVIZ_CACHE=0 turns it off. It is bounded like the capture cache
(hierviz.foundation.cache_limit: on a small disk, its free space): the least recently used entries
go first, and an entry larger than the bound is not kept (`EngineStore.notes` says so). A folder
that cannot hold an engine (full, read-only) keeps nothing and the build goes on: `notes` says so
once, whatever number of engines it refused.

Entries are checked when read: the store's record keeps the engine's and the runtime record's
length and SHA-256, and `load` (a cached build, on any machine) and `engine` (the bytes hv.measure
and part.compile() load) compare both with the files: a byte changed in place is found, not served.
A 2.2 GB engine's check is a read and a hash of 2.2 GB (`benchmarks/engine_digest.py`: about
1-3 s on a 2-core machine, where building it took minutes). A damaged entry is removed with one
CacheWarning and a note, and built again.

A first build's entry is finished after `part.build()` returned (hierviz.foundation.writes_behind):
`save` of an engine file whose last pieces are still being written moves it into place on a
thread of its own. This process's readers (`load`, `engine`, `builds`, `clear`, ...) wait for it
first; another process sees the entry whole or not at all; the interpreter's exit waits for it.
What it could not keep then (a disk that filled) is one CacheWarning per reason, not a note
(the build's notes were said when it returned).

Temp files (an engine or a record being written) are named for their writer
(hierviz.foundation.temp_files): one a killed writer left is removed when a store opens, when it
evicts and by `clear()`; one another process is writing now is left alone.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import pickle
import warnings
from pathlib import Path
from typing import Any

import torch

from hierviz.building.build_keys import build_key
from hierviz.foundation import cache_folder, temp_files, writes_behind
from hierviz.foundation.cache_warning import CacheWarning
from hierviz.foundation.cache_limit import ENV_LIMIT, CacheLimit, cache_limit
from hierviz.foundation.damaged_entry import DamagedEntry
from hierviz.foundation.disk_entry import DiskEntry
from hierviz.foundation.disk_store import RECORD, DiskStore, FileSource
from hierviz.trt.engine_build import EngineBuild
from hierviz.trt.engine_file import EngineFile

FOLDER = "builds"
STALE_TMP_S = temp_files.STALE_S  # a temp file untouched this long, whose writer is gone, is removed
ENGINE, RUNTIME = ".engine", ".runtime"
_FULL = (errno.ENOSPC, errno.EDQUOT)  # the disk (or the user's quota) takes no more


def stored_engine(gm: torch.fx.GraphModule, settings: Any) -> tuple[bytes, dict] | None:
    """(serialized engine, runtime record) that part.build() kept for `gm` with these settings
    (hv.measure's CompilationSettings), or None: what hv.measure and part.compile() load instead
    of building the engine again. None when the build cache is off, or the entry is damaged
    (then it is removed, with a CacheWarning, and built again)."""
    if not cache_folder.enabled():
        return None
    store = EngineStore()
    key = build_key(gm, settings)
    found = store.load(key, check_engine=False)  # engine() checks the very bytes it hands over
    if found is None or found.stage != "built":
        return None
    engine, runtime = store.engine(key), store.runtime(key)
    return None if engine is None or runtime is None else (engine, runtime)


def _size(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n} bytes"


class EngineStore:
    """The folder of built engines (`<key>.json`, `<key>.engine`, `<key>.runtime`) and of graph
    runs (`run-<key>.json`), bounded by its DiskStore's `store.max_bytes` (None: unbounded).
    `notes`: what a user should know of what it did not keep."""

    def __init__(self, where: Path | None = None, max_bytes: int | None = None, *, sweep: bool = True) -> None:
        """`sweep`: remove the temp files killed writers left now (`hierviz cache info` only counts them)."""
        base = where if where is not None else cache_folder.folder()
        self.limit = cache_limit(base) if max_bytes is None else CacheLimit(max_bytes)
        self.store = DiskStore(base / FOLDER, self.limit.bytes, sweep=sweep)
        self.folder = self.store.folder
        self._notes: list[str] = []
        self._refused: dict[str, list[str]] = {}  # why the folder took no engine -> the engines it refused
        self._warned: set[str] = set()  # why writes finished after their build kept nothing (one warning each)

    @property
    def notes(self) -> list[str]:
        """What a user should know of what this store did not keep, each said once: an engine
        larger than the bound; a folder that could not take engines (one note, however many)."""
        said = list(self._notes)
        for why, engines in list(self._refused.items()):  # a write behind may add one meanwhile
            more = len(engines) - 1
            who = engines[0] if not more else f"{engines[0]} and {more} other engine{'s' if more > 1 else ''}"
            said.append(f"{who} {'was' if not more else 'were'} not kept in the build cache: {why}")
        return said

    # ------------------------------------------------------------------ reading
    def load(self, key: str, *, label: str = "", check_engine: bool = True) -> EngineBuild | None:
        """The build kept under `key` (its engine left on disk: `engine(key)` reads it), or None
        when there is none, or it is damaged (its engine file's length or digest, or its runtime
        record, disagrees with the record: then it is removed, with a CacheWarning and a note
        naming `label`, the subgraph's tag). `check_engine=False` leaves the engine's digest to
        `engine(key)`, which checks the bytes it reads."""
        self.wait(key)
        try:
            fields = self.store.get(key)
            if fields is None:
                return None
            if check_engine:
                self.store.checked_path(key, ENGINE)
            self.store.read(key, RUNTIME)
            build = self._build(fields)
        except (DamagedEntry, OSError, TypeError, ValueError) as exc:
            self.stale(key, exc, label)
            return None
        return build

    @staticmethod
    def _build(fields: dict) -> EngineBuild:
        """An EngineBuild of the record's fields (JSON lists back to tuples where the field is one)."""
        types = {f.name: str(f.type) for f in dataclasses.fields(EngineBuild)}
        for name, value in fields.items():
            if isinstance(value, list) and types.get(name, "").startswith("tuple"):
                fields[name] = tuple(value)
        return EngineBuild(**fields)

    def stale(self, key: str, why: BaseException | str, label: str = "") -> None:
        """Say (one CacheWarning, and a note naming `label` when given) that the build kept under
        `key` is damaged, and remove it: it is built again."""
        self.store.damaged(key, f"part.build(): the cached build {self.folder / key}.* is damaged ({why}); it is "
                                "removed and will be built again. `hierviz cache clear` empties the cache.")
        if label:
            self._note(f"{label}'s cached build was damaged ({why}): it was removed and built again")

    def engine(self, key: str) -> bytes | None:
        """The serialized engine kept under `key`, checked against its record's length and digest;
        None when there is none or it is damaged (then removed, with a CacheWarning): a damaged
        engine never reaches hv.measure."""
        self.wait(key)
        try:
            return self.store.read(key, ENGINE)
        except (DamagedEntry, OSError) as exc:
            self.stale(key, exc)
            return None

    def runtime(self, key: str) -> dict | None:
        """What Torch-TensorRT's runtime module needs beside the engine kept under `key`, checked
        against its record, or None (a damaged one is removed, with a CacheWarning)."""
        self.wait(key)
        try:
            data = self.store.read(key, RUNTIME)
            value = None if data is None else pickle.loads(data)
        except (DamagedEntry, OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError,
                ValueError) as exc:
            self.stale(key, f"its runtime file cannot be read: {type(exc).__name__}: {exc}")
            return None
        return value if isinstance(value, dict) else None

    def load_run(self, key: str) -> tuple[bool, dict | None]:
        """(known, the run failure's fields or None) of a graph's run in PyTorch kept under `key`."""
        try:
            fields = self.store.get(f"run-{key}")
        except DamagedEntry:  # run again, and kept again
            return False, None
        if fields is None:
            return False, None
        return True, fields.get("failure")

    # ------------------------------------------------------------------ writing
    def save_run(self, key: str, failure: dict | None) -> None:
        """Keep what running a graph in PyTorch gave (None: it ran) under `key`."""
        try:
            self.store.put(f"run-{key}", {"failure": failure})
        except OSError:
            return

    def wait(self, key: str | None = None) -> None:
        """Wait until this process's write of `key` (every key when None) into the store is done."""
        writes_behind.wait(str(self.folder), key)

    def save(self, key: str, build: EngineBuild, *, label: str = "") -> str | None:
        """Keep `build` under `key` (the engine first, then its runtime record, then its record,
        each atomically); then drop the least recently used entries beyond the bound. An engine
        the build wrote to a file (`build.engine_file`, best made in this store's `folder`) is
        moved into place, not read. None when it is kept; else why not (also added to `notes`,
        naming `label`, the subgraph's tag): an entry larger than the bound (nothing is evicted
        for it), or a folder that cannot be written. Neither is an error: the build is simply not
        kept (nor its engine file). An engine file still being written (convert_and_build's
        `wait_for_disk=False`) that fits is kept after this returns (module docstring): None."""
        engine_file = build.engine_file
        bound = self.store.max_bytes
        if engine_file is not None and engine_file.kept and not engine_file.written and \
                (bound is None or self._size(build) <= bound):
            writes_behind.behind(str(self.folder), key, lambda: self._save_behind(key, build, label),
                                 f"{label}'s engine" if label else "an engine")
            return None
        return self._save_now(key, build, label)

    def _save_behind(self, key: str, build: EngineBuild, label: str) -> None:
        """`save` once the engine file holds the whole engine (the engine in memory where the disk
        refused part of it); what it did not keep is one CacheWarning, once per reason (the build
        that made it has returned: its notes are said)."""
        assert build.engine_file is not None
        finished = build.engine_file.finish()
        if not isinstance(finished, EngineFile):  # the disk refused part of it: the bytes read back, not a copy
            engine: Any = memoryview(finished).cast("B")
            build = dataclasses.replace(build, engine=engine, engine_file=None, engine_size=None)
        self._save_now(key, build, label, late=True)

    @staticmethod
    def _fields(build: EngineBuild) -> dict[str, Any]:
        """The record's fields of `build` (all but the engine and the runtime record)."""
        fields = {f.name: getattr(build, f.name) for f in dataclasses.fields(build)
                  if f.name not in ("engine", "engine_file", "runtime")}
        fields.update(engine_size=build.engine_bytes)
        return fields

    def _size(self, build: EngineBuild) -> int:
        """The bytes `build`'s entry takes."""
        runtime = 0 if build.runtime is None else len(pickle.dumps(build.runtime, protocol=pickle.HIGHEST_PROTOCOL))
        return len(json.dumps(self._fields(build), sort_keys=True)) + runtime + (build.engine_bytes or 0)

    def _save_now(self, key: str, build: EngineBuild, label: str, late: bool = False) -> str | None:
        """`save` (`late`: after the build returned, so what it did not keep is a CacheWarning)."""
        fields = self._fields(build)
        runtime = None if build.runtime is None else pickle.dumps(build.runtime, protocol=pickle.HIGHEST_PROTOCOL)
        engine_file = build.engine_file if build.engine_file is not None and build.engine_file.kept else None
        files: dict[str, FileSource] = {}
        if build.engine is not None:
            files[ENGINE] = build.engine
        elif engine_file is not None:
            files[ENGINE] = engine_file
        if runtime is not None:
            files[RUNTIME] = runtime
        size = (len(json.dumps(fields, sort_keys=True)) + len(runtime or b"")
                + (memoryview(build.engine).nbytes if build.engine is not None else
                   engine_file.size if engine_file is not None else 0))
        what = f"{label}'s engine" if label else "an engine"
        try:
            bound = self.store.max_bytes
            if bound is not None and size > bound:
                if self.limit.small_disk:  # the disk is short, not the limit: one note for every engine it refuses
                    return self._refuse(f"{what} ({_size(size)})", late, (
                        f"the disk of {self.folder} has {_size(bound)} free, the cache limit there; free "
                        f"space there or set {cache_folder.ENV_DIR} to a folder on a larger disk"))
                return self._note(f"{what} ({_size(size)}) was not kept in the build cache: "
                                  f"{self._too_big(size, bound)}", late)
            try:
                self.store.put(key, fields, files)
            except OSError as exc:
                return self._refuse(what, late, self._unwritable(exc))
        finally:
            if engine_file is not None:
                engine_file.discard()  # not moved into place: not kept
        return None

    def _too_big(self, size: int, bound: int) -> str:
        """Why an entry of `size` bytes, larger than the limit the user set (`bound`), is not kept,
        and what to do."""
        room = -(-2 * size // 1024**3) * 1024**3  # twice the entry, in whole GiB: room for others
        return (f"it is larger than the cache limit ({_size(bound)}); set {ENV_LIMIT}=<size> to "
                f"keep it (e.g. {ENV_LIMIT}={room // 1024**3}GiB)")

    def _unwritable(self, exc: OSError) -> str:
        """Why the folder took no entry (`exc`, what writing raised), and what to do."""
        if exc.errno in _FULL:
            return (f"the disk of {self.folder} is full ({exc.strerror}); free space there or set "
                    f"{cache_folder.ENV_DIR} to a folder on another disk")
        if self.folder.exists() and not self.folder.is_dir():
            return f"{self.folder} is a file, not a folder; remove it (`hierviz cache clear` does not)"
        return f"{self.folder} cannot be written ({exc.strerror or exc})"

    def _refuse(self, what: str, late: bool, why: str) -> str:
        """Note that the folder did not take `what` because of `why` (one note per reason, for
        every engine it refused; `late`: one CacheWarning per reason instead); the words for this one."""
        text = f"{what} was not kept in the build cache: {why}"
        if late:
            return self._warn(text, why)
        self._refused.setdefault(why, []).append(what)
        return text

    def _note(self, text: str, late: bool = False) -> str:
        if late:
            return self._warn(text, text)
        if text not in self._notes:
            self._notes.append(text)
        return text

    def _warn(self, text: str, why: str) -> str:
        """One CacheWarning per `why` of what a write finished after its build did not keep."""
        if why not in self._warned:
            self._warned.add(why)
            warnings.warn(f"part.build(): {text}", CacheWarning, stacklevel=2)
        return text

    def remove(self, key: str) -> None:
        """Remove the build kept under `key` (its record, engine and runtime record)."""
        self.wait(key)
        self.store.remove(key)

    # ------------------------------------------------------------------ the folder
    def builds(self) -> list[Path]:
        """The record of every build kept (one `<key>.json` each)."""
        self.wait()
        return [self.store.path(e.name, RECORD) for e in self.store.entries()
                if not e.name.startswith("run-") and self.store.path(e.name, RECORD) in e.files]

    def size(self) -> int:
        """The bytes the folder holds (engines, records, runs)."""
        self.wait()
        return self.store.size()

    def clear(self) -> int:
        """Remove every entry (builds and runs) and the temp files killed writers left (one
        another process is writing now stays: its build keeps its engine); how many builds there were."""
        count = len(self.builds())  # once this process's writes are done
        self.store.clear()
        return count

    def temp_survey(self) -> temp_files.Survey:
        """The temp files in the folder: being written now, or left by killed writers."""
        self.wait()
        return self.store.temp_survey()

    def entries(self) -> list[DiskEntry]:
        """(name, bytes, last used, files) of every entry, least recently used first: a build is
        its `<key>.*` files together (name `<key>`), a graph run its `run-<key>.json` (name
        `run-<key>`). Files being written (`.tmp-*`) belong to none."""
        self.wait()
        return self.store.entries()


__all__ = ["EngineStore", "stored_engine", "STALE_TMP_S"]
