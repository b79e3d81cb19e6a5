"""How long the explorer's worker process has sent nothing while it could have run: what tells
a hung worker from a starved one.

The worker runs at the lowest CPU priority (cpu_priority.py), so on a busy machine it may get a
percent of a CPU and send its heartbeat minutes late: not hung. Linux counts, for each thread,
the time it waited in a run queue for a CPU (the second field of /proc/<pid>/task/<tid>/schedstat);
that time is not silence. A worker that is blocked (a deadlock, a stopped process) waits for no
CPU, and one that runs without a word gets the CPU it waits for: their silence is the wall time.
Where the wait cannot be read (no /proc: macOS, Windows; the process gone), silence is the wall
time since it was last heard.
"""

from __future__ import annotations

import os
import threading
from typing import Callable

LOOK_S = 0.5  # the run queues are read at most this often (several jobs may wait on one worker)


def runqueue_wait_s(pid: int) -> float | None:
    """Seconds the threads of process `pid` have waited for a CPU so far (their sum), else None
    (no /proc, or no such process)."""
    tasks = f"/proc/{pid}/task"
    try:
        names = os.listdir(tasks)
    except OSError:
        return None
    total = 0
    for name in names:
        try:
            with open(f"{tasks}/{name}/schedstat", encoding="ascii") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            continue
    return total / 1e9


class SilenceWatch:
    """`watch(pid)`, then `heard()` at each word from the process; `silent_s()` is the time since
    the last word less the time the process's threads waited for a CPU meanwhile (at most the
    time that passed: several threads waiting at once are one process waiting), less the
    `allowance` given to `watch` until the first word. `clock` is the caller's time.monotonic."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._heard = 0.0  # when the last word came
        self._allowance = 0.0
        self._starved = 0.0  # seconds since the last word that the process waited for a CPU
        self._looked = 0.0  # when the run queues were last read, and the wait they said
        self._waited: float | None = None

    def watch(self, pid: int, allowance: float = 0.0) -> None:
        """Watch process `pid` from now, heard now; `allowance`: silence allowed until its first word."""
        with self._lock:
            self._pid, self._allowance = pid, allowance
            self._heard = self._looked = self._clock()
            self._starved = 0.0
            self._waited = runqueue_wait_s(pid)

    def heard(self) -> None:
        """A word from the process: silent since now."""
        with self._lock:
            self._heard = self._clock()
            self._starved = self._allowance = 0.0

    def silent_s(self) -> float:
        """Seconds since the last word that the process could have run (negative while an allowance lasts)."""
        with self._lock:
            now = self._clock()
            if self._pid is not None and now - self._looked >= LOOK_S:
                waited = runqueue_wait_s(self._pid)
                if waited is not None and self._waited is not None:
                    since = now - max(self._looked, self._heard)  # of the time since the last look, that after the word
                    self._starved += min(max(0.0, waited - self._waited), max(0.0, since))
                self._looked, self._waited = now, waited
            return now - self._heard - self._starved - self._allowance


__all__ = ["SilenceWatch", "runqueue_wait_s", "LOOK_S"]
