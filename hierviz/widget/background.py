"""Work the Explorer does in the background (the "compile today" line, "find fastest"): one
daemon thread per job, so the widget stays usable, and no exception lost or shown to the kernel.

The work itself runs in the Explorer's worker process (long_work.py): the thread only waits on
it, so the interpreter's exit needs to wait for nothing and ends the worker at once. Where a
job runs in this process instead (`busy_here()` says so), the exit starts no waiting work and
waits for the running one, up to EXIT_WAIT_S (exit_wait.py says why: a daemon thread still
inside torch's C++ code when Python finalizes aborts the process).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from hierviz.widget.exit_wait import EXIT_WAIT_S, settle_at_exit

logger = logging.getLogger(__name__)


class BackgroundJob:
    """One kind of background work, one run at a time: `start(work)` runs `work` on a daemon
    thread named `name`; while a run is going, a new `start` does not start a second thread: its
    work runs next, after the current one, replacing any work already waiting (only the latest
    is wanted). An exception `work` raises goes to `on_error` (a background thread must not die
    loudly). `thread` is the thread running now, else the latest one (join it to wait; before
    any run, a thread that has ended); `wait()` waits until nothing runs or waits. `busy_here()`:
    work runs in this process now (default: always), so the exit waits for it. `close()` (the
    Explorer's) drops the waiting work and starts none from then on."""

    def __init__(self, name: str, on_error: Callable[[Exception], None],
                 busy_here: Callable[[], bool] = lambda: True) -> None:
        self.name = name
        self.on_error = on_error
        self.busy_here = busy_here
        self._thread: threading.Thread | None = None
        self._next: Callable[[], None] | None = None
        self._active = False  # the thread's loop has not yet found nothing left to run
        self._lock = threading.Lock()
        self._closed = False  # closed, or the interpreter is ending: no new run starts
        self.runs = 0  # works run so far (a replaced waiting one is not run)
        settle_at_exit(self)

    @property
    def thread(self) -> threading.Thread:
        return self._thread or _ended()

    @property
    def running(self) -> bool:
        with self._lock:
            return self._active

    def start(self, work: Callable[[], None]) -> threading.Thread:
        with self._lock:
            if self._closed:  # closed, or the interpreter is ending: nothing new runs
                return self.thread
            if self._active:  # runs when the current one ends
                assert self._thread is not None
                self._next = work
                return self._thread
            self._active = True
            self._thread = threading.Thread(target=self._loop, args=(work,), name=self.name, daemon=True)
            self._thread.start()
            return self._thread

    def _loop(self, work: Callable[[], None] | None) -> None:
        while True:
            if work is None:
                with self._lock:
                    work, self._next = (None if self._closed else self._next), None
                    if work is None:
                        self._active = False
                        return
            self.runs += 1
            try:
                work()
            except Exception as exc:  # a background thread's work: reported through on_error, and logged
                logger.error("background work (%s) failed", self.name, exc_info=True)
                self.on_error(exc)
            work = None

    def settle_at_exit(self, timeout: float) -> None:
        """At the interpreter's exit: drop the waiting work and start none; wait (at most
        `timeout` s) for a run busy in this process (one waiting on the worker is not waited for)."""
        self.close()
        if self.running and self.busy_here():
            self.thread.join(timeout)

    def close(self) -> None:
        """Drop the waiting work and start none from now on (a run going ends as its work does:
        the Explorer's close cancels its job in the worker)."""
        with self._lock:
            self._closed, self._next = True, None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no work runs or waits (at most `timeout` s); whether it is so."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                thread = self._thread
            if thread is None:
                return True
            thread.join(None if end is None else max(0.0, end - time.monotonic()))
            if not self.running:
                return True
            if end is not None and time.monotonic() >= end:
                return False


_ENDED: list[threading.Thread] = []  # made on first use (no thread starts when this module is imported)


def _ended() -> threading.Thread:
    """A thread that has ended (what `thread` gives before any run)."""
    with _ENDED_LOCK:
        if not _ENDED:
            t = threading.Thread(target=lambda: None, name="hierviz-nothing-running", daemon=True)
            t.start()
            t.join()
            _ENDED.append(t)
        return _ENDED[0]


_ENDED_LOCK = threading.Lock()


__all__ = ["BackgroundJob", "EXIT_WAIT_S"]
