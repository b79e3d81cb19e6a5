"""Waits on work done in the explorer's worker process that end on what it does, not on this
machine's load: the worker runs at nice 19 and on a loaded CI machine gets a percent or two of
a CPU, so a fixed wall-clock wait fails while it is only starved. A wait here gives up once the
process doing the work (the worker when one runs, else this process) could have run
`could_run_s` seconds without it ending: time its threads waited for a CPU does not count
(hierviz/widget/silence_watch.py, the worker's own hang check). pytest-timeout still bounds
the whole test."""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

from hierviz.widget.silence_watch import SilenceWatch
from hierviz.widget.worker import Worker

COULD_RUN_S = 180.0


def shared_pid() -> int | None:
    """The process's shared worker's child, when one runs."""
    worker = Worker.shared_if_made()
    return worker.pid if worker is not None else None


def wait_on_worker(done: Callable[[], bool], what: str, pid: Callable[[], int | None] = shared_pid,
                   could_run_s: float = COULD_RUN_S) -> None:
    """Wait until `done()`; fail with `what` once the worker (`pid()`, else this process) could
    have run `could_run_s` seconds meanwhile."""
    watch = SilenceWatch(time.monotonic)
    spent, watched = 0.0, None  # could-run seconds of processes watched before; the one watched now
    while not done():
        current = pid() or os.getpid()
        if current != watched:
            spent += watch.silent_s() if watched is not None else 0.0
            watch.watch(current)
            watched = current
        could_run = spent + watch.silent_s()
        assert could_run < could_run_s, f"{what} (its process could have run {could_run:.0f} s meanwhile)"
        time.sleep(0.05)


def join_on_worker(thread: threading.Thread, what: str, pid: Callable[[], int | None] = shared_pid,
                   could_run_s: float = COULD_RUN_S) -> None:
    """`thread.join()`, with wait_on_worker's bound."""
    wait_on_worker(lambda: not thread.is_alive(), what, pid, could_run_s)
