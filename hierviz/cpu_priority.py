"""The CPU priority of this process's compiler subprocesses: `lower_compilers()` gives every
C/C++ compiler process this process started (TorchInductor's g++ / cc1plus / ld runs, which
keep the cores busy for seconds while "find fastest" or hv.measure compiles) the lowest CPU
priority, so that on a few shared cores a setting change the Explorer applies is not starved
by a background compile. The "UI first" gate (foreground.py) calls it when a change begins.

A compiler already lowered stays so until it exits (a few seconds: raising a priority back
needs privileges); it still gets every core nobody else wants. Linux only (it reads each
task's `children` file under /proc); elsewhere, or where a process is gone or not ours, it
does nothing. `ENABLED = False` turns it off (benchmarks compare both)."""

from __future__ import annotations

import glob
import os
from typing import Callable, Iterable

ENABLED = True  # False: lower_compilers() does nothing (the "before" of benchmarks/explore_latency.py)
LOWEST = 19  # the nice value given to a compiler process
COMPILERS = frozenset({"gcc", "g++", "c++", "cc", "cc1", "cc1plus", "as", "collect2", "ld", "lto1", "lto-wrapper",
                       "clang", "clang++", "nvcc", "cicc", "ptxas"})


def descendants(pid: int) -> list[int]:
    """The processes started by `pid`, by its children, and so on (empty where /proc has no
    `children` files)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for path in glob.glob(f"/proc/{parent}/task/*/children"):
            try:
                with open(path) as f:
                    kids = [int(k) for k in f.read().split()]
            except (OSError, ValueError):
                continue
            found.extend(kids)
            todo.extend(kids)
    return found


def command_name(pid: int) -> str | None:
    """The process's command name (/proc/<pid>/comm), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def lower_compilers(pid: int | None = None, names: Iterable[str] = COMPILERS,
                    set_priority: Callable[[int, int, int], None] | None = None) -> list[int]:
    """Give the lowest CPU priority to the processes descending from `pid` (this process by
    default) whose command name is in `names`; returns their ids. Never raises."""
    if not ENABLED or not hasattr(os, "setpriority"):
        return []
    wanted = frozenset(names)
    setter = set_priority or os.setpriority
    lowered = []
    for child in descendants(os.getpid() if pid is None else pid):
        if command_name(child) not in wanted:
            continue
        try:
            setter(os.PRIO_PROCESS, child, LOWEST)
        except OSError:  # gone meanwhile, or not ours
            continue
        lowered.append(child)
    return lowered


__all__ = ["lower_compilers", "descendants", "command_name", "COMPILERS", "LOWEST", "ENABLED"]
