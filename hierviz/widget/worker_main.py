"""The worker process's side (hierviz/widget/worker.py starts it): keep each graph it is
sent, run each job in a thread of its own and answer it.

What it times is timed alone: a timing job ("measure", "tune") waits until no other job runs,
then runs with no other job beside it; jobs that arrive meanwhile (and while a timing job waits)
wait for it to end. Other jobs run side by side. A build never makes a timing job wait for its
end: before each conversion and build it starts (between engines, and between a fix search's
candidates: `between_builds`) it steps aside while a timing job waits, so that job runs alone,
then carries on; a cancelled build stops there. With $HIERVIZ_WORKER_JOB_LOG set, the start and
end of every stretch a job runs are appended to that file (for the test that checks it).

Jobs (kind: payload -> answer):
- "compile_today": a Config -> `compile_today(graph, config)` (a TodaysCompile; its counts cross)
- "measure": (Config, hv.measure options) -> the `hv.Measurement` of the graph's partition
  with that Config; progress reports (stage, done, total) are sent as it goes
- "tune": hv.tune's keyword arguments -> its TuneResult (without its graph and Optuna study)
- "build": (Config, dynamo graph name) -> the hv.Builds of the partition with that Config, with
  the smallest failing part of each failed engine (with_repros), pickled without its partitions
  (Builds.__getstate__)
- "numerics": (Config, hv.numerics options) -> hv.numerics of the partition with that Config
- "blockers": a Config -> the partition's `blockers()` table
A "cancel" message (its payload the job id) drops a job that has not started and stops a
measurement or a search at its next progress report (a compile stage), a build before its next
conversion or build; a cancelled job is not answered (nothing it built is stored).

Messages are (job id, kind, payload) pickles: requests on stdin, answers on the original
stdout ("ok" / "raised" with a pickled answer or HiervizError, "error" / "unreadable" with a
text, "progress", and a "beat" every BEAT_S). Prints go to stderr. The process exits at once
when its stdin ends (the parent closed it, or died).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import pickle
import sys
import threading
import time
from typing import Any, BinaryIO, Callable, Iterator

from hierviz.widget.cpu_priority import lower_priority
from hierviz import trt
from hierviz.building.subgraph_builds import between_builds
from hierviz.compare.partition_cache import cached_partition
from hierviz.errors import HiervizError
from hierviz.capturing.graph_codec import unpack_graph
from hierviz.partitioner.upstream.todays_compile import compile_today
from hierviz.widget.worker import PICKLING_ERRORS, UNPICKLING_ERRORS

BEAT_S = 1.0
TIMING = frozenset({"measure", "tune"})  # jobs that time: each runs alone
JOB_LOG = "HIERVIZ_WORKER_JOB_LOG"
logger = logging.getLogger(__name__)
# stdin ending: at a message's boundary (EOFError), inside one (the parent died mid-message), or closed
_STDIN_ENDED: tuple[type[Exception], ...] = (EOFError, pickle.UnpicklingError, OSError, ValueError)


class _Cancelled(Exception):
    """The parent cancelled the job (its explorer closed): stop, answer nothing."""


class Scheduler:
    """Admits jobs: any number of other jobs side by side, or one timing job alone. A timing
    job waiting blocks new jobs from starting, so it is never starved; a running job that can
    pause lets it in at its next pause (`step_aside`)."""

    def __init__(self, log: str | None = None) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self._timing = False
        self._waiting = 0  # timing jobs waiting for the others to end
        self._log = log

    @property
    def waiting(self) -> int:
        """Timing jobs waiting to run now."""
        with self._cond:
            return self._waiting

    @property
    def running(self) -> int:
        """Jobs in a slot now (a build stepped aside is not)."""
        with self._cond:
            return self._running

    def wait_for(self, predicate: Callable[["Scheduler"], bool], timeout: float | None = None) -> bool:
        """Wait until `predicate(self)` holds (checked at each change of the scheduler's state)."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)

    @contextlib.contextmanager
    def slot(self, kind: str) -> Iterator["_Stretch"]:
        timing = kind in TIMING
        self._enter(timing)
        stretch = _Stretch(kind, time.monotonic())
        try:
            yield stretch
        finally:
            self._write(kind, stretch.start, time.monotonic())
            self._leave(timing)

    def step_aside(self, stretch: "_Stretch") -> None:
        """Called by a running job (not a timing one) where it can pause: while a timing job
        waits, leave the slot until the timing jobs have run, then take it again."""
        with self._cond:
            if not self._waiting:
                return
        self._write(stretch.kind, stretch.start, time.monotonic())
        self._leave(False)
        self._enter(False)  # waits while a timing job waits or runs
        stretch.start = time.monotonic()

    def _enter(self, timing: bool) -> None:
        with self._cond:
            if timing:
                self._waiting += 1
                self._cond.notify_all()  # (wait_for sees it)
                while self._running:
                    self._cond.wait()
                self._waiting -= 1
                self._timing = True
            else:
                while self._timing or self._waiting:
                    self._cond.wait()
            self._running += 1
            self._cond.notify_all()

    def _leave(self, timing: bool) -> None:
        with self._cond:
            self._running -= 1
            if timing:
                self._timing = False
            self._cond.notify_all()

    def _write(self, kind: str, start: float, end: float) -> None:
        if self._log:
            with open(self._log, "a", encoding="utf-8") as f:
                f.write(f"{kind} {start:.6f} {end:.6f}\n")


class _Stretch:
    """A job's current run in its slot: its kind, and when it (last) took the slot."""

    def __init__(self, kind: str, start: float) -> None:
        self.kind = kind
        self.start = start


_SCHEDULER = Scheduler(os.environ.get(JOB_LOG))
_CANCELLED: set[int] = set()


class _Answers:
    """The protocol's output, one writer at a time."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.lock = threading.Lock()

    def send(self, key: int, kind: str, payload: Any) -> None:
        with self.lock:
            pickle.dump((key, kind, payload), self.out, protocol=pickle.HIGHEST_PROTOCOL)
            self.out.flush()


# The first job of each kind imports what it needs before it starts, one job at a time: the
# explorer sends compile-today and "find fastest" together, and two threads importing
# torch_tensorrt, torch._dynamo and torch._inductor for the first time at once can deadlock
# (the worker then answered nothing until it was killed as hung).
_IMPORTING = threading.Lock()
_READY: set[str] = set()


def _import_for(kind: str) -> None:
    with _IMPORTING:
        if kind in _READY:
            return
        trt.load()  # torch_tensorrt, through hierviz's GPU-free loader (compile-today's partitioners)
        if kind in ("measure", "tune"):
            import torch._inductor.compile_fx  # noqa: F401 - TorchInductor, which their compiles use

            import hierviz.latency
        if kind == "build":
            import hierviz.building.build_partition
        if kind == "numerics":
            import hierviz.latency
        if kind == "tune":
            import hierviz.compare.tuning  # noqa: F401

            try:
                import optuna  # noqa: F401 - the study's; without it the job says how to install it
            except ImportError:
                pass
        _READY.add(kind)


def _stopping(progress: Callable[..., None]) -> Callable[..., None]:
    """A progress callback for the trials of a search: raises when the job is cancelled (its
    reports are not sent: the parent shows the search's own progress)."""
    def check(*_args: Any) -> None:
        progress(None)

    return check


def run_job(kind: str, payload: Any, graph: Any, inputs: Any, progress: Callable[..., None]) -> Any:
    """One job's answer (see the module docstring)."""
    _import_for(kind)
    if kind == "compile_today":
        return compile_today(graph, payload)
    if kind == "measure":
        from hierviz.latency import measure  # loads what measuring needs, in the worker only

        config, options = payload
        return measure(cached_partition(graph, config), inputs, progress=progress, **options)
    if kind == "build":
        from hierviz.building.build_partition import build_one

        config, dynamo_graph = payload
        builds = build_one(cached_partition(graph, config), dynamo_graph, inputs)
        return builds.with_repros()  # each failed engine's smallest failing part; pickles without its partitions
    if kind == "tune":
        from hierviz.compare.tuning import tune

        stops = {"progress": _stopping(progress)}  # each trial's hv.measure: a cancelled search stops there
        result = tune(graph, inputs, **{**payload, "measure": {**(payload.get("measure") or {}), **stops}})
        # what is sent: the parent has the graph; Optuna's study stays here
        return dataclasses.replace(result, graph=None, study=None)
    if kind == "numerics":
        from hierviz.latency import numerics

        config, options = payload
        return numerics(cached_partition(graph, config), inputs, **options)
    if kind == "blockers":
        return cached_partition(graph, payload).blockers()
    raise ValueError(f"no job called {kind!r}")


def _pause(key: int, stretch: _Stretch) -> Callable[[], None]:
    """A build job's `between_builds` callback: stop when the job is cancelled (its explorer
    closed, or a newer build of the same explorer took its place); else, while a timing job
    waits, let it run alone, then carry on."""
    def pause() -> None:
        if key in _CANCELLED:
            raise _Cancelled()
        _SCHEDULER.step_aside(stretch)
        if key in _CANCELLED:  # cancelled while the timing job ran
            raise _Cancelled()

    return pause


def _serve(key: int, kind: str, subject: Any, request: bytes, answers: _Answers) -> None:
    try:
        if isinstance(subject, str):
            raise ValueError(f"its graph could not be read: {subject}")
        graph, inputs = subject
        payload = pickle.loads(request)
    except UNPICKLING_ERRORS as exc:  # e.g. a function of a module this process cannot import
        answers.send(key, "unreadable", f"{type(exc).__name__}: {exc}")
        return
    except Exception as exc:
        # loading runs the reconstructors of the user's objects: whatever else they raise is answered
        # the same way (the parent runs the job itself), never left unanswered, and logged here
        logger.error("a worker job's request (%s) could not be read", kind, exc_info=True)
        answers.send(key, "unreadable", f"{type(exc).__name__}: {exc}")
        return

    def progress(*args: Any) -> None:
        if key in _CANCELLED:
            raise _Cancelled()
        if args != (None,):  # (None,): only asking whether the job is cancelled
            answers.send(key, "progress", args)

    reply: tuple[str, Any]
    try:
        with _SCHEDULER.slot(kind) as stretch:
            if key in _CANCELLED:
                raise _Cancelled()
            pauses = between_builds(_pause(key, stretch)) if kind == "build" else contextlib.nullcontext()
            with pauses:
                answer = run_job(kind, payload, graph, inputs, progress)
        reply = ("ok", pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    except _Cancelled:
        _CANCELLED.discard(key)
        return
    except HiervizError as exc:
        try:
            reply = ("raised", pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL))
        except PICKLING_ERRORS:  # an error holding something that does not pickle: its text crosses
            reply = ("error", f"{type(exc).__name__}: {exc}")
    except BaseException as exc:
        # the job thread's boundary: whatever the job raised (torch's errors, a SystemExit in the
        # user's code ...) is answered, as its text, and the parent shows it; it is logged here too
        logger.error("a worker job (%s) failed", kind, exc_info=True)
        reply = ("error", f"{type(exc).__name__}: {exc}")
    if key in _CANCELLED:  # cancelled while it ran (measure may wrap the stop in its own error): not answered
        _CANCELLED.discard(key)
        return
    answers.send(key, *reply)


def _beat(answers: _Answers) -> None:
    """A sign of life at once (the parent's start-up grace ends with it), then every BEAT_S."""
    while True:
        try:
            answers.send(0, "beat", None)
        except OSError:
            os._exit(0)
        threading.Event().wait(BEAT_S)


def main() -> None:
    lower_priority()
    answers = _Answers(os.fdopen(os.dup(1), "wb"))
    os.dup2(2, 1)  # prints (of torch_tensorrt's import, of compiles ...) must not reach the protocol
    requests = sys.stdin.buffer
    threading.Thread(target=_beat, args=(answers,), daemon=True).start()
    subjects: dict[int, tuple[Any, Any] | str] = {}  # number -> (graph, example inputs), or why it is unreadable
    while True:
        try:
            key, kind, payload = pickle.load(requests)
        except _STDIN_ENDED:  # the parent is done with us
            os._exit(0)
        if kind == "path":  # the parent's sys.path: functions a job names import as they do there
            sys.path[:] = payload + [p for p in sys.path if p not in payload]
        elif kind == "graph":
            try:
                packed, inputs = pickle.loads(payload)
                subjects[key] = (unpack_graph(packed), inputs)
            except UNPICKLING_ERRORS as exc:  # its jobs say so
                subjects[key] = f"{type(exc).__name__}: {exc}"
        elif kind == "drop":
            subjects.pop(payload, None)
        elif kind == "cancel":
            _CANCELLED.add(payload)
        else:
            number, request = payload
            subject = subjects.get(number, "it was never sent")
            threading.Thread(target=_serve, args=(key, kind, subject, request, answers), daemon=True,
                             name=f"hierviz-worker-{kind}").start()


if __name__ == "__main__":
    main()
