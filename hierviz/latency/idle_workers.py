"""Waiting, before timing, until this process's TorchInductor compile workers are idle.

TorchInductor compiles in a pool of worker processes (children of this one) that can keep a
core or more busy for seconds after `torch.compile` or a cold TorchInductor subgraph returns;
an eager baseline timed then looked up to 200x slower than it is. `wait_for_idle_workers`
returns at once when this process has no child processes or none of their threads is running
(every worker is blocked, waiting for work: nothing is compiling). Otherwise it samples the
children's CPU time every INTERVAL_S and returns once they used less than IDLE_SHARE of a core
over one interval (or after `timeout` seconds, saying so).

Only compile workers count: the explorer's worker process (`python -m
hierviz.widget.worker_main`, a child of the kernel that compiles and times on its own, at a lower
CPU priority) is not one, so it and its own children are left out; a measurement in the kernel
never waits for the explorer's search.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable

IDLE_SHARE = 0.05  # children using less than this share of one core count as idle
INTERVAL_S = 0.05  # how long each sample of the children's CPU time lasts
TIMEOUT_S = 20.0  # the longest wait before timing anyway
BUSY_STATES = frozenset("RD")  # a thread running (or waiting for a core), or in disk sleep


NOT_COMPILERS = ("hierviz.widget.worker_main",)  # a child whose command line names one of these is not waited for


def _children() -> list:
    """This process's child processes, grandchildren included, except the explorer's worker
    process and its whole tree (NOT_COMPILERS)."""
    import psutil

    found = []
    todo = psutil.Process().children()
    while todo:
        child = todo.pop()
        try:
            if any(name in part for part in child.cmdline() for name in NOT_COMPILERS):
                continue
            todo.extend(child.children())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        found.append(child)
    return found


def _thread_states(child) -> str:
    """One letter per thread of `child` (Linux's /proc states: R running, S sleeping, D disk...);
    elsewhere, the process's own state."""
    import psutil

    tasks = Path(f"/proc/{child.pid}/task")
    if tasks.is_dir():
        states = ""
        for stat in tasks.glob("*/stat"):
            try:
                states += stat.read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue  # the thread ended meanwhile
        return states
    return "R" if child.status() in (psutil.STATUS_RUNNING, psutil.STATUS_DISK_SLEEP) else "S"


def children_busy() -> bool | None:
    """None when this process has no child processes (nothing can be compiling); else whether a
    thread of one of them is running or in disk sleep right now (an idle pool worker sleeps,
    blocked until it is sent work)."""
    import psutil

    children = _children()
    if not children:
        return None
    for child in children:
        try:
            if BUSY_STATES & set(_thread_states(child)):
                return True
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return False


def children_cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process's child processes."""
    import psutil

    total = 0.0
    for child in _children():
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


def wait_for_idle_workers(timeout: float = TIMEOUT_S, *, busy: Callable[[], bool | None] = children_busy,
                          cpu: Callable[[], float] = children_cpu_s,
                          sleep: Callable[[float], None] = time.sleep,
                          interval: float = INTERVAL_S) -> tuple[float, bool]:
    """(seconds waited, whether the workers went idle): no wait when `busy()` says there are no
    workers (None) or none is running (False); else sample the children's CPU time every
    `interval` seconds until one interval used less than IDLE_SHARE of a core, at most `timeout`."""
    if not busy():
        return 0.0, True
    last = cpu()
    steps = max(1, math.ceil(timeout / interval - 1e-9))
    for step in range(1, steps + 1):
        sleep(interval)
        now = cpu()
        if now - last < IDLE_SHARE * interval:
            return step * interval, True
        last = now
    return steps * interval, False


__all__ = ["NOT_COMPILERS", "wait_for_idle_workers", "children_busy", "children_cpu_s", "IDLE_SHARE", "INTERVAL_S",
           "TIMEOUT_S"]
