"""Debouncing the Explorer's updates: many quick control changes make one re-partition.

`Debouncer.schedule()` after each change; `apply` runs `delay` seconds after the last one (on
the running event loop when there is one, as in a Jupyter kernel, else on a timer thread), or
at once when `delay` is 0. `flush()` runs a pending apply now. A change made while `apply`
runs (one control setting another) makes it run again before returning. No widgets here.

At the interpreter's exit a change still waiting is dropped and a running apply is waited for
(exit_wait.py): the timer thread is a daemon, and one stopped inside torch's C++ code aborts
the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any, Callable, Iterator

from hierviz.widget.exit_wait import settle_at_exit


class Debouncer:
    """Runs `apply` once per burst of `schedule()` calls (see the module docstring); `wrap`
    wraps the timer's callback (the Explorer's error guard)."""

    def __init__(self, delay: float, apply: Callable[[], None],
                 wrap: Callable[[Callable[..., Any]], Callable[..., Any]] = lambda f: f) -> None:
        self.delay = delay
        self._apply = apply
        self._wrap = wrap
        self._lock = threading.RLock()
        self._pending = False
        self._applying = False
        self._timer: threading.Timer | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._exiting = False  # the interpreter is ending: nothing more is applied
        settle_at_exit(self)

    def schedule(self) -> None:
        with self._lock:
            self._pending = True
            if self._applying:
                return  # the running apply reads the controls again when it finishes
            if self.delay <= 0:
                self.run_now()
                return
            self.cancel()
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                self._handle = loop.call_later(self.delay, self._wrap(self.flush))
            else:
                self._timer = threading.Timer(self.delay, self._wrap(self.flush))
                self._timer.daemon = True
                self._timer.start()

    @property
    def scheduled(self) -> str | None:
        """How a change waits: 'loop' (the event loop), 'timer' (a thread) or None."""
        return "loop" if self._handle is not None else "timer" if self._timer is not None else None

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def flush(self) -> None:
        """Run a pending apply now."""
        with self._lock:
            if self._pending and not self._applying and not self._exiting:
                self.run_now()

    def settle_at_exit(self, timeout: float) -> None:
        """At the interpreter's exit: drop a waiting change and apply nothing more; wait (at
        most `timeout` s) for an apply running on the timer thread."""
        self._exiting = True  # a timer firing from now on applies nothing
        if self._lock.acquire(timeout=timeout):  # held while an apply runs
            try:
                self.cancel()
            finally:
                self._lock.release()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Control changes made inside run `apply` once, at the end (e.g. "apply best")."""
        with self._lock:
            self._applying = True
            try:
                yield
            finally:
                self._applying = False
            self._pending = True
            self.run_now()

    def run_now(self) -> None:
        with self._lock:
            self.cancel()
            self._applying = True
            try:
                while True:
                    self._pending = False
                    self._apply()
                    if not self._pending:  # a control changed while applying (e.g. focus -> view)
                        break
            finally:
                self._applying = False
