"""Temp files that name their writer, so that one a killed writer left can be told from one
another process is writing now.

Each cache writes an entry into a temp file in the entry's folder, then renames it into place
(no process ever reads half an entry). The temp file is named `.tmp-<host>-<pid>-<random><suffix>`
(`make`): the machine (a digest of its name) and the process writing it. A writer killed
mid-file leaves it behind; `stale(path)` is true once the file has not been written for
STALE_S and its writer is gone (on this machine: no process has its pid; a file of another
machine, or of an older hierviz that did not name its writer: by its age alone). A file of a
writer still running is left alone, however old (unless older than ABANDONED_S: a pid taken
again by another process). `sweep` removes the stale ones of a folder, `survey` counts all;
`write_all` is how the caches write a temp file's bytes (one place a test makes the disk full).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from hierviz.foundation.digests import text_digest

PREFIX = ".tmp-"
STALE_S = 600  # a writer keeps its file's time fresh while it writes: untouched this long, it is done or gone
ABANDONED_S = 24 * 3600  # a file this old is no writer's, whatever holds its pid now
_NAMED = re.compile(r"^\.tmp-([0-9a-f]{8})-(\d+)-")


def _host() -> str:
    """This machine, as temp names say it (a digest of its name: no character a file name refuses)."""
    return text_digest(socket.gethostname(), 8)


_HOST = _host()


def prefix(pid: int | None = None) -> str:
    """The start of the temp names of process `pid` on this machine (default: this process):
    `.tmp-<host>-<pid>-`."""
    return f"{PREFIX}{_HOST}-{os.getpid() if pid is None else pid}-"


def make(folder: Path | str, suffix: str = "") -> tuple[int, str]:
    """A new temp file in `folder` named for this process: (open descriptor, path), as
    tempfile.mkstemp gives them (OSError when the folder cannot be written)."""
    return tempfile.mkstemp(dir=folder, prefix=prefix(), suffix=suffix)


def write_all(fd: int, data: Any) -> None:
    """Write all of `data` (bytes, or any buffer) to the open descriptor `fd`; OSError when the
    disk takes no more (a full disk), with the bytes before it written."""
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view):]


class Writer(NamedTuple):
    """Who writes a temp file: the machine (as `_host` says it) and the process id."""

    host: str
    pid: int


def writer_of(name: str) -> Writer | None:
    """The writer a temp file's name says, or None (a name of an older hierviz, or not a temp name)."""
    m = _NAMED.match(name)
    return Writer(m.group(1), int(m.group(2))) if m else None


def running(pid: int) -> bool:
    """Whether a process with `pid` runs on this machine (a zombie, killed and not yet reaped, does not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):  # no /proc (macOS): the signal said it is there
        return True


def stale(path: Path, now: float | None = None) -> bool:
    """Whether the temp file at `path` was left by a writer that is gone (see the module
    docstring); False for a file that is gone itself."""
    try:
        age = (time.time() if now is None else now) - path.stat().st_mtime
    except OSError:
        return False
    if age < STALE_S:
        return False
    who = writer_of(path.name)
    if who is None or who.host != _HOST or age >= ABANDONED_S:
        return True
    return not running(who.pid)


def temp_paths(folder: Path, suffix: str = "") -> list[Path]:
    """The temp files in `folder` (named `.tmp-*<suffix>`); none when it cannot be read."""
    try:
        return sorted(folder.glob(f"{PREFIX}*{suffix}"))
    except OSError:
        return []


def sweep(paths: Iterable[Path], now: float | None = None) -> int:
    """Remove the stale ones of `paths`; how many were removed."""
    removed = 0
    for path in paths:
        if stale(path, now):
            with contextlib.suppress(FileNotFoundError, PermissionError):
                path.unlink()
                removed += 1
    return removed


class Survey(NamedTuple):
    """Temp files found: how many, their bytes, and how many of them are stale."""

    files: int = 0
    bytes: int = 0
    stale: int = 0

    def plus(self, other: "Survey") -> "Survey":
        return Survey(self.files + other.files, self.bytes + other.bytes, self.stale + other.stale)

    def text(self) -> str:
        """`hierviz cache info`'s words for them (empty when there are none)."""
        if not self.files:
            return ""
        files = "file" if self.files == 1 else "files"
        return (f"{self.files} temp {files} ({self.bytes / 2**20:.1f} MiB), {self.stale} of them left by runs that "
                "ended mid-write (removed by the next run or `hierviz cache clear`), the others being written now")


def survey(paths: Iterable[Path], now: float | None = None) -> Survey:
    """How many of `paths` there are, their bytes and how many are stale."""
    found = Survey()
    for path in paths:
        try:
            size = path.stat().st_size
        except OSError:
            continue
        found = found.plus(Survey(1, size, int(stale(path, now))))
    return found


__all__ = ["PREFIX", "STALE_S", "ABANDONED_S", "Survey", "Writer", "make", "prefix", "running", "stale", "survey",
           "sweep", "temp_paths", "write_all", "writer_of"]
