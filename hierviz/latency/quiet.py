"""Waiting, before timing, until this process's TorchInductor compile workers are idle.

TorchInductor compiles in a pool of worker processes (children of this one) that can keep a
core or more busy for seconds after `torch.compile` or a cold TorchInductor subgraph returns;
an eager baseline timed then looked up to 200x slower than it is. `wait_for_idle_workers`
samples the children's CPU time and returns once they used less than IDLE_SHARE of a core over
one interval (or after `timeout` seconds, saying so).
"""

from __future__ import annotations

import math
import time
from typing import Callable

IDLE_SHARE = 0.05  # children using less than this share of one core count as idle
INTERVAL_S = 0.2  # how long each sample of the children's CPU time lasts
TIMEOUT_S = 20.0  # the longest wait before timing anyway


def children_cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process's child processes (0 without psutil)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil comes with the test and notebook extras
        return 0.0
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


def wait_for_idle_workers(timeout: float = TIMEOUT_S, *, cpu: Callable[[], float] = children_cpu_s,
                          sleep: Callable[[float], None] = time.sleep,
                          interval: float = INTERVAL_S) -> tuple[float, bool]:
    """(seconds waited, whether the workers went idle): sample the children's CPU time every
    `interval` seconds until one interval used less than IDLE_SHARE of a core, at most `timeout`."""
    last = cpu()
    steps = max(1, math.ceil(timeout / interval - 1e-9))
    for step in range(1, steps + 1):
        sleep(interval)
        now = cpu()
        if now - last < IDLE_SHARE * interval:
            return step * interval, True
        last = now
    return steps * interval, False


__all__ = ["wait_for_idle_workers", "children_cpu_s", "IDLE_SHARE", "TIMEOUT_S"]
