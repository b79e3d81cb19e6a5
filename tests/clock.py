"""Time the test controls: a clock that moves only when told, and timers that fire only when
told, put in place of a module's own `time` or `threading.Timer` (monkeypatch), so that a test
of a timeout or a debounce does not depend on how fast this machine runs.

    clock = ManualClock()
    use_clock(monkeypatch, hierviz.widget.worker, clock)   # the module's time.monotonic() is clock()
    clock.advance(5.0)

    timers = ManualTimers()
    use_timers(monkeypatch, hierviz.widget.debounce, timers)  # its threading.Timer(...) is timers'
    timers.fire()                                              # the one pending timer runs, here
"""

from __future__ import annotations

import threading
import time
import types
from typing import Any, Callable


class ManualClock:
    """time.monotonic / perf_counter / time, standing still until `advance`."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


def use_clock(monkeypatch: Any, module: types.ModuleType, clock: ManualClock) -> None:
    """`module.time` becomes the time module with monotonic, perf_counter and time read from
    `clock` (sleep and the rest stay real); the module must `import time` and call time.<f>()."""
    fake = types.SimpleNamespace(**{name: getattr(time, name) for name in dir(time) if not name.startswith("_")})
    fake.monotonic = fake.perf_counter = fake.time = clock
    monkeypatch.setattr(module, "time", fake)


class ManualTimer:
    """A threading.Timer that never runs by itself: `fire()` runs its function (unless cancelled)."""

    def __init__(self, owner: "ManualTimers", interval: float, function: Callable[..., Any],
                 args: Any = None, kwargs: Any = None) -> None:
        self.owner, self.interval, self.function = owner, interval, function
        self.args, self.kwargs = tuple(args or ()), dict(kwargs or {})
        self.cancelled = self.started = self.fired = False
        self.daemon = True

    def start(self) -> None:
        self.started = True
        self.owner.made.append(self)

    def cancel(self) -> None:
        self.cancelled = True

    def fire(self) -> None:
        if not self.cancelled and not self.fired:
            self.fired = True
            self.function(*self.args, **self.kwargs)


class ManualTimers:
    """Every timer a module started, in order; `pending` those neither cancelled nor fired."""

    def __init__(self) -> None:
        self.made: list[ManualTimer] = []

    def __call__(self, interval: float, function: Callable[..., Any], args: Any = None,
                 kwargs: Any = None) -> ManualTimer:
        return ManualTimer(self, interval, function, args, kwargs)

    @property
    def pending(self) -> list[ManualTimer]:
        return [t for t in self.made if t.started and not t.cancelled and not t.fired]

    def fire(self) -> None:
        """Run the one pending timer (as its thread would when its interval ends)."""
        (timer,) = self.pending
        timer.fire()


def use_timers(monkeypatch: Any, module: types.ModuleType, timers: ManualTimers) -> None:
    """`module.threading` becomes the threading module with Timer made by `timers`."""
    fake = types.SimpleNamespace(**{name: getattr(threading, name) for name in dir(threading)
                                    if not name.startswith("__")})
    fake.Timer = timers
    monkeypatch.setattr(module, "threading", fake)
