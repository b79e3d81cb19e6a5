"""Cache entries written after the call that made them has returned (write-behind): a first
`part.build()` returns once TensorRT has handed its engine over, and the build cache's entry is
finished on a thread of its own (the last pieces written, the entry moved into place).

- **Whole or absent.** The entry is put as every DiskStore entry is (atomically, its record
  last): a reader in any process sees it whole or not at all; `kill -9` during the write leaves
  no half entry, only a temp file the next store sweeps.
- **Seen by this process.** `wait(folder, name)` waits for this process's pending write of
  `name` in `folder` (every name when None); a cache reads an entry only after it, so a second
  build in this process finds the first's engine.
- **Never lost at exit.** The threads are not daemons: the interpreter waits for them before
  it finalizes (as for any such thread), so a script that ends right after `build()` still
  leaves its entry. A fork's child inherits no pending write (its thread is the parent's).
- **Never raised later.** What a write raises is one CacheWarning naming what was not kept,
  never an exception in the user's thread.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Callable

from hierviz.foundation.cache_warning import CacheWarning

_LOCK = threading.Lock()
_PENDING: dict[tuple[str, str], threading.Thread] = {}  # (folder, name) -> the thread writing it
_LAST: dict[str, threading.Thread] = {}  # folder -> the thread of the write started last there


def _run(write: Callable[[], None], before: threading.Thread | None, what: str) -> None:
    if before is not None:
        before.join()  # one write into a folder at a time, in the order they were started
    try:
        write()
    except BaseException as exc:  # noqa: BLE001 - said once as a warning: the user's thread has moved on
        warnings.warn(f"{what} was not kept in the cache: {type(exc).__name__}: {exc}", CacheWarning, stacklevel=2)


def behind(folder: str, name: str, write: Callable[[], None], what: str) -> None:
    """Run `write()` (which puts entry `name` into the store in `folder`) on a thread of its own
    and return now, after the writes into `folder` started before it (the disk takes one engine at
    a time, and what they say comes in the order they were built); `what` names the entry in the
    warning said if it raises."""
    key = (str(folder), name)
    with _LOCK:
        before = _LAST.get(key[0])
        before = before if before is not None and before.is_alive() else None
        thread = threading.Thread(target=_run, args=(write, before, what), name=f"hierviz-write-{name[:16]}",
                                  daemon=False)
        _PENDING[key] = _LAST[key[0]] = thread
        thread.start()


def wait(folder: str, name: str | None = None) -> None:
    """Wait until this process's pending writes into `folder` (of `name` only, when given) are
    done, whether they kept their entry or not."""
    with _LOCK:
        threads = [(k, t) for k, t in _PENDING.items() if k[0] == str(folder) and (name is None or k[1] == name)]
    for key, thread in threads:
        thread.join()
        with _LOCK:
            if _PENDING.get(key) is thread:
                del _PENDING[key]
            if _LAST.get(key[0]) is thread:
                del _LAST[key[0]]


def wait_all() -> None:
    """Wait until every pending write of this process is done."""
    with _LOCK:
        folders = {k[0] for k in _PENDING}
    for folder in folders:
        wait(folder)


def pending() -> int:
    """How many writes of this process are still under way."""
    with _LOCK:
        return sum(t.is_alive() for t in _PENDING.values())


def _forget_in_child() -> None:
    global _LOCK
    _LOCK = threading.Lock()
    _PENDING.clear()
    _LAST.clear()


os.register_at_fork(after_in_child=_forget_in_child)

__all__ = ["behind", "pending", "wait", "wait_all"]
