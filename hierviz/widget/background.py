"""Work the Explorer does in the background (the "compile today" line, "find fastest"): one
daemon thread per job, so the widget stays usable, and no exception lost or shown to the kernel.

The work itself runs in the Explorer's worker process (long_work.py): the thread only waits on
it, so the interpreter's exit needs to wait for nothing and ends the worker at once. Where a
job runs in this process instead (`busy_here()` says so), the exit waits for it, up to
EXIT_WAIT_S: a daemon thread still inside torch's C++ code when Python stops its threads is
unwound through that code, and the process aborts ("terminate called without an active
exception") instead of exiting cleanly.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from typing import Callable

EXIT_WAIT_S = 30.0  # the longest the interpreter's exit waits for one job running in this process
_JOBS: "weakref.WeakSet[BackgroundJob]" = weakref.WeakSet()


class BackgroundJob:
    """One kind of background work, one run at a time: `start(work)` runs `work` on a daemon
    thread named `name`; an exception it raises goes to `on_error` (a background thread must
    not die loudly). `thread` is the latest run's thread (join it to wait; before any run, a
    thread that has ended). `busy_here()`: work runs in this process now (default: always), so
    the exit waits for it."""

    def __init__(self, name: str, on_error: Callable[[Exception], None],
                 busy_here: Callable[[], bool] = lambda: True) -> None:
        self.name = name
        self.on_error = on_error
        self.busy_here = busy_here
        self._thread: threading.Thread | None = None
        _JOBS.add(self)

    @property
    def thread(self) -> threading.Thread:
        return self._thread or _ENDED

    @property
    def running(self) -> bool:
        return self.thread.is_alive()

    def start(self, work: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                work()
            except Exception as exc:  # noqa: BLE001 - reported through on_error
                self.on_error(exc)

        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        return self._thread


_ENDED = threading.Thread(target=lambda: None, name="hierviz-nothing-running", daemon=True)
_ENDED.start()
_ENDED.join()


@atexit.register
def _wait_for_jobs() -> None:
    """At exit: let jobs running in this process finish (bounded), so no thread is stopped
    inside C++ code; jobs waiting on a worker process are not waited for."""
    for job in list(_JOBS):
        if job.running and job.busy_here():
            job.thread.join(EXIT_WAIT_S)


__all__ = ["BackgroundJob", "EXIT_WAIT_S"]
