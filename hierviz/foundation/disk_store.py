"""One store on disk for every cache hierviz keeps (captures, built engines and graph runs,
compiled artifacts): entries under names, each one or more files `<name><suffix>` and a record
`<name>.json` (the caller's fields, and the length and SHA-256 of each file).

- **Atomic.** Each file is written into a temp file named for its writer (`.tmp-<host>-<pid>-…`,
  hierviz.foundation.temp_files), then, under the folder's lock (hierviz.foundation.file_lock:
  the folder itself is locked, no lock file is made), renamed into place, the record last. A
  reader holds the lock shared while it reads a record and its files: it sees a whole entry or
  none, and two processes putting the same entry at once leave one of them whole.
- **Checked on read.** `get` compares each file's length with the record (a stat), `read` and
  `checked_path` its SHA-256 too: an entry that disagrees raises DamagedEntry, and
  `damaged` says so once (a CacheWarning) and removes it, unless another process has put it
  again since it was read.
- **Bounded.** Beyond `max_bytes` the least recently used entries go first, all their files
  together, never the one just put (None: unbounded). Reading an entry marks it used.
- **Temp files.** Those a killed writer left are removed when the store opens, when it evicts
  and by `clear`; one another process is writing now is left alone (temp_files.stale).

A `shard` of n puts each entry in a subfolder named for its name's first n characters (many
entries, few per folder). A record written by another hierviz version (no `format` of this
store's) is no entry: a miss, replaced by the next put.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Union

from hierviz.errors import user_stacklevel
from hierviz.foundation import temp_files
from hierviz.foundation.cache_warning import CacheWarning
from hierviz.foundation.damaged_entry import DamagedEntry
from hierviz.foundation.digests import data_digest, file_digest
from hierviz.foundation.disk_entry import DiskEntry, StoredFile, WrittenFile
from hierviz.foundation.file_lock import locked_folder

STORE_FORMAT = "hierviz-disk-store/1"
RECORD = ".json"

# what a put writes for one suffix: bytes (or any buffer); a function that writes the temp path
# it is given and says whether it did; or a file written already (WrittenFile: moved into place)
FileSource = Union[bytes, bytearray, memoryview, Callable[[Path], bool], WrittenFile]


class DiskStore:
    """Entries in `folder`, at most `max_bytes` of them (None: unbounded). `temp_suffix`: only
    temp files of that suffix are this store's (a folder shared with others: the system's temp
    folder). `sweep`: remove the temp files killed writers left now."""

    def __init__(self, folder: Path, max_bytes: int | None = None, *, shard: int = 0, temp_suffix: str = "",
                 sweep: bool = True) -> None:
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        self.shard = shard
        self.temp_suffix = temp_suffix
        self._read: dict[str, int] = {}  # name -> the inode of its record last read (a put makes a new one)
        if sweep:
            self.sweep_temp()

    # ------------------------------------------------------------------ names
    def _dir(self, name: str) -> Path:
        return self.folder / name[:self.shard] if self.shard else self.folder

    def path(self, name: str, suffix: str) -> Path:
        """Where the file `suffix` of entry `name` lies (`RECORD`: its record)."""
        return self._dir(name) / f"{name}{suffix}"

    def new_temp(self, suffix: str = "", name: str = "") -> tuple[int, Path]:
        """A new temp file named for this process, in the folder of entry `name` (open descriptor,
        path), for a file written piece by piece and put later (a WrittenFile); OSError when the
        folder cannot be written."""
        folder = self._dir(name)
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = temp_files.make(folder, suffix)
        return fd, Path(tmp)

    @contextlib.contextmanager
    def _locked(self, shared: bool = False) -> Iterator[None]:
        """The folder's lock while the block runs, exclusive (putting, removing) or `shared`
        (reading a record and its files: no put lands in between); none where the folder is not
        there yet."""
        with contextlib.ExitStack() as stack:
            with contextlib.suppress(OSError):
                stack.enter_context(locked_folder(self.folder, shared=shared))
            yield

    # ------------------------------------------------------------------ writing
    def put(self, name: str, record: Mapping[str, Any], files: Mapping[str, FileSource] | None = None) -> bool:
        """Keep `files` (suffix -> FileSource) and `record` (JSON) under `name`, replacing what was
        there, atomically (see the module docstring), then evict beyond the bound. False when a
        writing function declined (nothing kept); OSError when the folder takes no file (nothing
        of the entry is left then). ValueError for a name an entry cannot have (its files are
        told apart by what follows the first dot) or a file named as the record."""
        if not name or "." in name or "/" in name or RECORD in (files or {}):
            raise ValueError(f"DiskStore.put({name!r}): a name without '.' or '/', files other than {RECORD}")
        folder = self._dir(name)
        folder.mkdir(parents=True, exist_ok=True)
        temps: list[Path] = []
        staged: list[tuple[str, Path | WrittenFile]] = []
        checks: dict[str, StoredFile] = {}
        placed = False
        try:
            for suffix, source in (files or {}).items():
                if isinstance(source, (bytes, bytearray, memoryview)):
                    temps.append(self._temp_with(folder, suffix, source))
                    staged.append((suffix, temps[-1]))
                    checks[suffix] = StoredFile(memoryview(source).nbytes, data_digest(memoryview(source)))
                elif callable(source):
                    fd, made = temp_files.make(folder, suffix)
                    os.close(fd)
                    temps.append(Path(made))
                    if not source(temps[-1]):
                        return False
                    checks[suffix] = StoredFile(temps[-1].stat().st_size, file_digest(temps[-1]))
                    staged.append((suffix, temps[-1]))
                else:
                    checks[suffix] = StoredFile(source.size, source.digest)
                    staged.append((suffix, source))
            text = json.dumps({"format": STORE_FORMAT, "name": name, "record": dict(record),
                               "files": {s: list(c) for s, c in checks.items()}}, sort_keys=True).encode()
            temps.append(self._temp_with(folder, RECORD, text))
            with self._locked():
                placed = True
                for suffix, src in staged:
                    if isinstance(src, Path):
                        os.replace(src, self.path(name, suffix))
                    else:
                        src.move_to(self.path(name, suffix))
                os.replace(temps[-1], self.path(name, RECORD))
        except BaseException:
            if placed:
                self.remove(name)  # a file without its record, or a record of other files: no entry
            raise
        finally:
            for tmp in temps:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
        self.evict(keep=name)
        return True

    @staticmethod
    def _temp_with(folder: Path, suffix: str, data: Any) -> Path:
        """A temp file named for this process in `folder`, holding `data`."""
        fd, tmp = temp_files.make(folder, suffix)
        try:
            try:
                temp_files.write_all(fd, data)
            finally:
                os.close(fd)
        except BaseException:
            os.unlink(tmp)
            raise
        return Path(tmp)

    # ------------------------------------------------------------------ reading
    def _record(self, name: str) -> dict | None:
        """The whole record of `name` (format, name, files, record), lengths checked; None when
        there is none or another hierviz wrote it; DamagedEntry when it is damaged."""
        path = self.path(name, RECORD)
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                raw = f.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise DamagedEntry(f"its record cannot be read ({exc.strerror or exc})") from None
        self._read[name] = st.st_ino
        try:
            whole = json.loads(raw)
        except ValueError as exc:
            raise DamagedEntry(f"its record is not JSON: {exc}") from None
        if not isinstance(whole, dict):
            raise DamagedEntry("its record is not this store's")
        if whole.get("format") != STORE_FORMAT:
            return None
        files = whole.get("files")
        if (whole.get("name") != name or not isinstance(whole.get("record"), dict) or not isinstance(files, dict)
                or not all(isinstance(c, list) and len(c) == 2 and isinstance(c[0], int) and isinstance(c[1], str)
                           for c in files.values())):
            raise DamagedEntry("its record is not this entry's")
        for suffix, (size, _) in files.items():
            try:
                found = self.path(name, suffix).stat().st_size
            except FileNotFoundError:
                raise DamagedEntry(f"its {suffix[1:]} file is gone") from None
            if found != size:
                raise DamagedEntry(f"its {suffix[1:]} file is {found} bytes, the record says {size}")
        return whole

    def get(self, name: str) -> dict | None:
        """The record kept under `name`, its files' lengths checked (a stat each), or None when
        there is none; DamagedEntry when the record cannot be read or a file is gone or of
        another length. It marks the entry used."""
        with self._locked(shared=True):
            whole = self._record(name)
        if whole is None:
            return None
        self.used(name)
        return dict(whole["record"])

    def _listed(self, name: str, suffix: str) -> StoredFile | None:
        whole = self._record(name)
        if whole is None or suffix not in whole["files"]:
            return None
        return StoredFile(*whole["files"][suffix])

    def read(self, name: str, suffix: str) -> bytes | None:
        """The bytes of file `suffix` of `name`, checked against its record's length and SHA-256;
        None when there is no such entry or file; DamagedEntry when they disagree."""
        with self._locked(shared=True):
            listed = self._listed(name, suffix)
            if listed is None:
                return None
            try:
                data = self.path(name, suffix).read_bytes()
            except FileNotFoundError:
                raise DamagedEntry(f"its {suffix[1:]} file is gone") from None
        self._same(suffix, listed, len(data), data_digest(data))
        return data

    def checked_path(self, name: str, suffix: str) -> Path | None:
        """The path of file `suffix` of `name` once its length and SHA-256 (read in pieces: a 2.2
        GB engine is never whole in memory) agree with its record; None when there is no such
        entry or file; DamagedEntry when they disagree."""
        path = self.path(name, suffix)
        with self._locked(shared=True):
            listed = self._listed(name, suffix)
            if listed is None:
                return None
            try:
                self._same(suffix, listed, path.stat().st_size, file_digest(path))
            except FileNotFoundError:
                raise DamagedEntry(f"its {suffix[1:]} file is gone") from None
        return path

    @staticmethod
    def _same(suffix: str, listed: StoredFile, size: int, digest: str) -> None:
        if size != listed.size:
            raise DamagedEntry(f"its {suffix[1:]} file is {size} bytes, the record says {listed.size}")
        if digest != listed.digest:
            raise DamagedEntry(f"its {suffix[1:]} file's digest disagrees with the record")

    def used(self, name: str) -> None:
        """Mark `name` used now: evicted last."""
        with contextlib.suppress(OSError):
            os.utime(self.path(name, RECORD))

    def damaged(self, name: str, message: str) -> None:
        """Say `message` (one CacheWarning) of the damaged entry `name` and remove it, unless its
        record is no longer the one read (another process put it again meanwhile)."""
        warnings.warn(message, CacheWarning, stacklevel=user_stacklevel())
        seen = self._read.pop(name, None)
        with self._locked():
            try:
                if seen is not None and self.path(name, RECORD).stat().st_ino != seen:
                    return
            except OSError:
                pass
            self._remove(name)

    # ------------------------------------------------------------------ the folder
    def remove(self, name: str) -> None:
        """Remove every file of `name`."""
        with self._locked():
            self._remove(name)

    def _remove(self, name: str) -> None:
        try:
            paths = glob.glob(glob.escape(str(self._dir(name) / name)) + ".*")
        except OSError:
            return
        for path in paths:
            if Path(path).name.split(".", 1)[0] == name:
                with contextlib.suppress(OSError):
                    os.unlink(path)

    def _folders(self) -> list[Path]:
        """The folders entries (and temp files) lie in: the store's, and its shards'."""
        if not self.shard:
            return [self.folder]
        try:
            return [self.folder, *sorted(p for p in self.folder.iterdir() if p.is_dir() and not p.name.startswith("."))]
        except OSError:
            return []

    def entries(self) -> list[DiskEntry]:
        """Every entry, least recently used first (files of one name together; temp files and the
        the like belong to none)."""
        grouped: dict[str, DiskEntry] = {}
        for folder in self._folders():
            try:
                paths = [p for p in folder.iterdir() if not p.name.startswith(".")]
            except OSError:
                continue
            for path in paths:
                try:
                    st = path.stat()
                except OSError:
                    continue
                if not path.is_file():
                    continue
                name = path.name.split(".", 1)[0]
                old = grouped.get(name, DiskEntry(name, 0, 0.0, []))
                grouped[name] = DiskEntry(name, old.bytes + st.st_size, max(old.used, st.st_mtime), [*old.files, path])
        return sorted(grouped.values(), key=lambda e: (e.used, e.name))

    def size(self) -> int:
        """The bytes of every entry."""
        return sum(e.bytes for e in self.entries())

    def evict(self, keep: str | None = None) -> list[str]:
        """Remove the least recently used entries until the total is within the bound (never
        `keep`, the entry just put, which fits by itself), and the stale temp files; the names
        removed. An unbounded store does nothing (its temp files go when it opens and by `clear`)."""
        if self.max_bytes is None:
            return []
        self.sweep_temp()
        removed: list[str] = []
        with self._locked():
            entries = self.entries()
            total = sum(e.bytes for e in entries)
            for entry in entries:
                if total <= self.max_bytes:
                    break
                if entry.name == keep:
                    continue
                for path in entry.files:
                    with contextlib.suppress(OSError):
                        path.unlink()
                total -= entry.bytes
                removed.append(entry.name)
        return removed

    def clear(self) -> int:
        """Remove every entry and the stale temp files (one another process is writing now stays);
        how many entries there were."""
        with self._locked():
            entries = self.entries()
            for entry in entries:
                for path in entry.files:
                    with contextlib.suppress(OSError):
                        path.unlink()
        self.sweep_temp()
        return len(entries)

    def temp_paths(self) -> list[Path]:
        """The temp files of this store (named `.tmp-*<temp_suffix>`)."""
        return [p for folder in self._folders() for p in temp_files.temp_paths(folder, self.temp_suffix)]

    def sweep_temp(self) -> int:
        """Remove the temp files killed writers left (a live writer's stays); how many."""
        return temp_files.sweep(self.temp_paths())

    def temp_survey(self) -> temp_files.Survey:
        """The temp files: being written now, or left by killed writers."""
        return temp_files.survey(self.temp_paths())


__all__ = ["DiskStore", "FileSource", "RECORD", "STORE_FORMAT"]
