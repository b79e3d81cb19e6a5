"""Background work of the graph-by-graph explorer (GraphsExplorer): every graph re-partitioned at
the settings in force, and the picture of every graph, off the kernel's way (issue 43).

`Latest` runs one kind of work on a background thread (widget/background.py's BackgroundJob),
one run at a time, and only for the newest request: `request(key)` while a run is going makes
that run's answer be dropped (its `wanted()` turns False, so it may stop early) and the newest
key run next; a request for the key already answered does nothing. `wait()` blocks until the
newest request is answered; `close()` stops taking requests and drops what is running.

`partition_every(capture, config, wanted)`: every graph of `capture` partitioned with `config`,
as `hv.partition(..., ir="torch_compile")` does, stopping between graphs (Superseded) once
`wanted()` says no. No widgets here.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Generic, Hashable, TypeVar

from hierviz.settings.config import Config
from hierviz.capturing.by_graph.dynamo_capture import DynamoCapture
from hierviz.partitioner import MultiGraphPartition, partition_graphs
from hierviz.partitioner import partition_graph
from hierviz.widget.background import BackgroundJob

logger = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
_NOTHING: Any = object()


class Superseded(Exception):
    """A newer request came: the work of this one stops (never shown)."""


class Latest(Generic[K]):
    """Work for the newest requested key only, on a background thread (see the module docstring).

    `work(key, wanted)` makes the answer (it may raise Superseded once `wanted()` is False);
    `on_done(key, answer)` is called on the background thread with each answer still wanted when
    it is made, and `on_error(key, exc)` with each exception of a run still wanted (the key is not
    run again until requested anew). `answered` is the key of the last answer or error (None
    before any), `pending` the requested key not answered yet (None when there is none), `runs`
    how many runs ended with an answer."""

    def __init__(self, name: str, work: Callable[[K, Callable[[], bool]], Any],
                 on_done: Callable[[K, Any], None], on_error: Callable[[K, Exception], None],
                 answered: K | None = None) -> None:
        self._work = work
        self._on_done = on_done
        self._on_error = on_error
        self._cond = threading.Condition()
        self._wanted: Any = _NOTHING if answered is None else answered
        self._answered: Any = _NOTHING if answered is None else answered
        self._running = False
        self._closed = False
        self.runs = 0
        self._job = BackgroundJob(name, lambda exc: None)  # run() reports its own errors

    @property
    def pending(self) -> K | None:
        with self._cond:
            return None if self._closed or self._wanted in (_NOTHING, self._answered) else self._wanted

    @property
    def answered(self) -> K | None:
        with self._cond:
            return None if self._answered is _NOTHING else self._answered

    @property
    def running(self) -> bool:
        with self._cond:
            return self._running

    def request(self, key: K) -> None:
        """Answer `key` in the background (the newest request wins)."""
        with self._cond:
            if self._closed:
                return
            self._wanted = key
            self._cond.notify_all()
            if self._running or key == self._answered:
                return  # the running loop takes the newest key next, or there is nothing to do
            self._running = True
        self._job.start(self._run)

    def forget(self) -> None:
        """Drop the answered key, so that the next request of it runs again."""
        with self._cond:
            self._answered = _NOTHING

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the newest request is answered (True), or `timeout` seconds pass (False)."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._running or (not self._closed and self._wanted is not _NOTHING
                                    and self._wanted != self._answered):
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self) -> None:
        """Take no more requests; a run going is dropped (it stops at its next `wanted()`)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                key = self._wanted
                if self._closed or key is _NOTHING or key == self._answered:
                    self._running = False
                    self._cond.notify_all()
                    return

            def wanted(key: Any = key) -> bool:
                return not self._closed and self._wanted == key

            try:
                answer, error = self._work(key, wanted), None
            except Superseded:
                continue
            except Exception as exc:  # a background thread's work: handed to on_error (and logged), never raised here
                logger.error("the work on every graph failed", exc_info=True)
                answer, error = None, exc
            with self._cond:
                if not wanted():
                    continue
            try:
                if error is None:
                    self._on_done(key, answer)
                else:
                    self._on_error(key, error)
            except Exception as exc:  # a failing callback must not stop the loop: logged, then shown through on_error
                logger.error("a callback of the work on every graph failed", exc_info=True)
                try:
                    self._on_error(key, exc)
                except Exception:  # nothing left to show it with: logged
                    logger.error("on_error failed too", exc_info=True)
            with self._cond:  # answered only now: wait() returns once the answer is shown
                self._answered = key
                if error is None:
                    self.runs += 1
                self._cond.notify_all()


def partition_every(capture: DynamoCapture, config: Config, wanted: Callable[[], bool]) -> MultiGraphPartition:
    """Every graph of `capture` partitioned with `config` (hv.partition's graph-by-graph way);
    Superseded, between two graphs, once `wanted()` is False."""
    run = partition_graph

    def one(graph: Any, cfg: Config) -> Any:
        if not wanted():
            raise Superseded
        return run(graph, cfg)

    return partition_graphs(capture, config, run=one)


__all__ = ["Latest", "Superseded", "partition_every"]
