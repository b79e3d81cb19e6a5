"""Settling hierviz's own threads before the interpreter finalizes, so that none is stopped
inside torch's C++ code.

When Python finalizes, a daemon thread that still runs is stopped the next time it takes the
interpreter's lock; a thread stopped inside torch's C++ code is unwound through a `noexcept`
frame and the process aborts ("terminate called without an active exception", exit 134) after
everything else went well. Reproduced here with a daemon thread that multiplies matrices while
the main thread returns (6 aborts in 6 runs), and with the Explorer's debounce timer firing
as a script ends (4 in 4). So every kind of thread hierviz starts that may run torch work in
this process (a BackgroundJob's, a Debouncer's timer) is registered here; at exit each is told
to start nothing new and is waited for, up to EXIT_WAIT_S.
"""

from __future__ import annotations

import atexit
import weakref
from typing import Protocol

EXIT_WAIT_S = 30.0  # the longest the interpreter's exit waits for one thread running work here


class SettlesAtExit(Protocol):
    def settle_at_exit(self, timeout: float) -> None:
        """Start no new work, and wait (at most `timeout` s) for the work running now."""


_WAITING: "weakref.WeakSet[SettlesAtExit]" = weakref.WeakSet()


def settle_at_exit(owner: SettlesAtExit) -> None:
    """Have the interpreter's exit settle `owner` (kept weakly: a collected owner runs nothing)."""
    _WAITING.add(owner)


@atexit.register
def _settle_all() -> None:
    for owner in list(_WAITING):
        owner.settle_at_exit(EXIT_WAIT_S)


__all__ = ["EXIT_WAIT_S", "SettlesAtExit", "settle_at_exit"]
