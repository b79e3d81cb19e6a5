"""The explorer's worker at a lower CPU priority than the kernel it serves.

`lower_priority()` sets NICE for this process and for its scheduling group: the worker runs in
a session of its own, and where Linux groups each session's processes (autogroup) a nice value
only ranks processes within their group, so the group's own nice is lowered too. Where either
cannot be set, the worker still runs. This file imports only `os`, so the worker's command runs
it as a file (`runpy.run_path`) before it imports hierviz (which imports torch: a second of CPU
that must not compete with the kernel either)."""

from __future__ import annotations

import os

NICE = 19  # below the kernel's, so a setting change is never starved


def lower_priority(nice: int = NICE) -> None:
    try:
        os.nice(max(0, nice - os.nice(0)))  # never raised again if it is lowered already
    except (AttributeError, OSError):
        pass
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:
        pass


if __name__ == "__lower__":  # run as a file by the worker's command
    lower_priority()


__all__ = ["NICE", "lower_priority"]
