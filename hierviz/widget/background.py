"""Work the Explorer does in the background (the "compile today" line, "find fastest"): one
daemon thread per job, so the widget stays usable, and no exception lost or shown to the kernel.

When the interpreter exits, running jobs are waited for (up to EXIT_WAIT_S each) before it
finalizes: a daemon thread still inside torch's C++ code when Python stops its threads is
unwound through that code, and the process aborts ("terminate called without an active
exception", exit status 134) instead of exiting cleanly.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from typing import Callable

EXIT_WAIT_S = 30.0  # the longest the interpreter's exit waits for one running job
_JOBS: "weakref.WeakSet[BackgroundJob]" = weakref.WeakSet()


class BackgroundJob:
    """One kind of background work, one run at a time: `start(work)` runs `work` on a daemon
    thread named `name`; an exception it raises goes to `on_error` (a background thread must
    not die loudly). `thread` is the latest run's thread (join it to wait)."""

    def __init__(self, name: str, on_error: Callable[[Exception], None]) -> None:
        self.name = name
        self.on_error = on_error
        self.thread: threading.Thread | None = None
        _JOBS.add(self)

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self, work: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                work()
            except Exception as exc:  # noqa: BLE001 - reported through on_error
                self.on_error(exc)

        self.thread = threading.Thread(target=run, name=self.name, daemon=True)
        self.thread.start()
        return self.thread


@atexit.register
def _wait_for_jobs() -> None:
    """At exit: let running jobs finish (bounded), so no thread is stopped inside C++ code."""
    for job in list(_JOBS):
        if job.running:
            job.thread.join(EXIT_WAIT_S)


__all__ = ["BackgroundJob", "EXIT_WAIT_S"]
