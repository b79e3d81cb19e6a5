"""One writer at a time across processes: `locked(path)` holds an exclusive lock on the sidecar
file `.<name>.lock` beside `path` (fcntl.flock) while its block runs. The operating system
releases it when the process ends however it ends, so a killed writer never leaves the next one
waiting. `locked_folder(folder)` locks a folder itself (no file is made: a cache's folder holds
only its entries). Where there is no fcntl (Windows) the block runs unlocked."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator


def lock_path(path: Path) -> Path:
    """The sidecar lock file of `path`."""
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path`'s sidecar lock file while the block runs; OSError when the
    lock file cannot be made (the caller says what it was writing)."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@contextlib.contextmanager
def locked_folder(folder: Path, *, shared: bool = False) -> Iterator[None]:
    """A lock on the folder `folder` itself while the block runs, exclusive (a writer) or
    `shared` (readers, side by side); OSError when the folder cannot be opened (it is not there).
    Not to be taken again by the process that holds it: the second waits for the first."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


__all__ = ["locked", "locked_folder", "lock_path"]
