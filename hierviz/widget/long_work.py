"""The Explorer's long work — the "torch_tensorrt.compile today" line, "measure latency", "build
engines" and "find fastest" — done in its worker process (hierviz/widget/worker.py), so the kernel's
process keeps only the UI, the partitioning and the drawing.

The process's one worker is started by the first job and sent each graph once. A job that cannot go there (its
settings do not pickle, e.g. `hv.support.where(lambda ...)`; or the worker cannot load a
function it names) runs in this process instead, and `notes[kind]` says why. A graph whose custom
op the worker cannot register (defined in `__main__`: a notebook cell) is found out once, by the
first job: every job on it then runs here, and its note names the op. A worker that
dies, is killed or hangs fails its jobs with a WorkerError (a HiervizError, shown by the
Explorer); the next job starts a fresh one. Each LongWork holds the worker through a handle of
its own (`Worker.hold()`): `close()` (the Explorer's close) cancels only this LongWork's jobs, and
the worker process ends when the last handle is closed, so closing one Explorer never stops
another's search. A closed LongWork takes no job again: each raises JobCancelled at once (a
build that was waiting to start would otherwise start the worker anew), and a build running in
this process stops before its next conversion or build.

Numerics, the Blockers tab's table and the HTML export's compile-today line are worker jobs
too: no partitioner of a what-if and no compile runs in the kernel.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from typing import Any, Callable, Mapping

from hierviz import trt
from hierviz.widget.worker import Hold, JobCancelled, Unsendable, Worker
from hierviz.settings.compile_rules import compile_config
from hierviz.settings.config import Config
from hierviz.errors import HiervizError
from hierviz.partitioner import Partition
from hierviz.partitioner.upstream.todays_compile import TodaysCompile, cached_compile_today, compile_today, remember

IN_WORKER = True  # False: every job runs in this process (tests that stand in for hv.measure or its clock)
HERE = "ran in this process, not the worker: "
CLOSED = "the Explorer was closed"


class LongWork:
    """The long work of one Explorer's graph (see the module docstring). `in_worker` (default
    IN_WORKER) False runs every job in this process."""

    def __init__(self, graph: Any, example_inputs: Any = None, *, in_worker: bool | None = None,
                 worker: Worker | None = None) -> None:
        self.graph = graph
        self.example_inputs = example_inputs
        self._in_worker_option = in_worker
        self._worker = worker
        self.notes: dict[str, str] = {}  # job kind -> why it last ran in this process
        self._line_lock = threading.Lock()  # one line at a time: quick changes do not queue up lines
        self.dynamo_graph: str | None = None  # "g3": the graph is dynamo graph 3 of torch.compile's path
        self._here = 0  # jobs running in this process now
        self._here_lock = threading.Lock()
        self._hold: Hold | None = None  # this LongWork's handle on the worker (made by its first job)
        self._hold_lock = threading.Lock()
        self.kernel_only: str | None = None  # why no job on this graph can go to the worker (its custom op)
        self.closed = False

    @property
    def in_worker(self) -> bool:
        """Jobs go to the worker process (the `in_worker` option, default IN_WORKER as it is now)."""
        return IN_WORKER if self._in_worker_option is None else self._in_worker_option

    @property
    def worker(self) -> Worker | None:
        """The worker process's handle (the process's shared one unless given), None when off."""
        if not self.in_worker:
            return None
        return self._worker or Worker.shared()

    @property
    def pid(self) -> int | None:
        """The worker process's id while it runs, else None."""
        return None if self.worker is None else self.worker.pid

    def running_here(self) -> bool:
        """A job runs in this process now (the interpreter's exit waits for it)."""
        return self._here > 0

    def _held(self, worker: Worker) -> Hold:
        with self._hold_lock:
            if self.closed:  # never a new hold (nor a new worker process) after close
                raise JobCancelled(CLOSED)
            if self._hold is None or self._hold.closed or self._hold.worker is not worker:
                self._hold = worker.hold()
                weakref.finalize(self, self._hold.close)  # an Explorer dropped unclosed lets go too
            return self._hold

    def _in_worker(self, kind: str, payload: Any, here: Callable[[], Any],
                   progress: Callable[..., None] | None = None) -> Any:
        """`payload`'s job in the worker; `here()` in this process when it cannot go there;
        JobCancelled once closed."""
        if self.closed:
            raise JobCancelled(CLOSED)
        worker = self.worker
        if self.kernel_only is not None:
            self.notes[kind] = HERE + self.kernel_only
        elif worker is not None:
            try:
                got = self._held(worker).run(self.graph, self.example_inputs, kind, payload, progress)
                self.notes.pop(kind, None)
                return got
            except Unsendable as exc:
                self.notes[kind] = HERE + str(exc)
                if exc.op is not None:  # the graph itself cannot go: not tried again
                    self.kernel_only = str(exc)
        else:
            self.notes[kind] = HERE + "the Explorer's worker is off"
        with self._here_lock:
            self._here += 1
        try:
            return here()
        finally:
            with self._here_lock:
                self._here -= 1

    # ------------------------------------------------------------------ the three jobs
    def made(self, part: Partition) -> TodaysCompile | None:
        """The compile-today answer for `part`'s settings when made, else None."""
        got = cached_compile_today(self.graph, part.config)
        if got is None and part.engine == "fast":
            got = TodaysCompile.of(part, "", 0.0)
        return got

    def make_line(self, part: Partition, wanted: Callable[[], bool] = lambda: True) -> TodaysCompile | None:
        """Make the line of `part`'s settings (the process-wide compile-today cache keeps it);
        None, at once, when `wanted()` says no by the time the worker is free (the Explorer
        shows another setting by then). A worker that fails raises its WorkerError (the
        Explorer's result store keeps it as the line's failed status)."""
        got = self.made(part)
        if got is not None:
            return got
        config = part.config
        with self._line_lock:
            if not wanted():
                return None
            got = cached_compile_today(self.graph, config)
            if got is not None:
                return got
            try:
                fast = compile_config(config)
            except HiervizError:  # compile refuses the setting: said at once, here
                return compile_today(self.graph, config)
            if not trt.present():  # asked without importing torch_tensorrt here (seconds): said at once
                return compile_today(self.graph, config)
            made = self._in_worker("compile_today", fast, lambda: compile_today(self.graph, fast))
        return remember(self.graph, config, made)

    def measure(self, part: Partition, progress: Callable[..., None] | None = None,
                options: Mapping[str, Any] | None = None) -> Any:
        """`hv.measure` of `part` with the example inputs and `options` (its Measurement)."""
        options = dict(options or {})

        def here() -> Any:
            from hierviz import latency

            return latency.measure(part, self.example_inputs, progress=progress, **options)

        return self._in_worker("measure", (part.config, options), here, progress)

    def build(self, part: Partition) -> Any:
        """`part.build()` (its hv.Builds): every TensorRT engine converted and built; for a dynamo
        graph of torch.compile's path (`dynamo_graph`), run on its first call's values and with
        what torch.compile then runs (MultiGraphPartition.build's answer for that graph)."""
        graph = self.dynamo_graph

        def here() -> Any:
            from hierviz.building.build_partition import build_one
            from hierviz.building.subgraph_builds import between_builds

            with between_builds(self._stop_if_closed):
                return build_one(part, graph, self.example_inputs)

        return self._in_worker("build", (part.config, graph), here)

    def numerics(self, part: Partition, options: Mapping[str, Any] | None = None) -> Any:
        """`hv.numerics` of `part` with the example inputs and `options` (in the worker)."""
        options = dict(options or {})

        def here() -> Any:
            from hierviz.latency import numerics

            return numerics(part, self.example_inputs, **options)

        return self._in_worker("numerics", (part.config, options), here)

    def blockers(self, part: Partition) -> Any:
        """`part.blockers()` (each what-if re-partitions: in the worker)."""
        return self._in_worker("blockers", part.config, part.blockers)

    def tune(self, base: Config, budget: int, **options: Any) -> Any:
        """`hv.tune` from `base` over the graph (its TuneResult, its graph this one's)."""
        kwargs = {"base": base, "budget": budget, "progress": False, **options}

        def here() -> Any:
            from hierviz.compare.tuning import tune

            return tune(self.graph, self.example_inputs, **kwargs)

        return dataclasses.replace(self._in_worker("tune", kwargs, here), graph=self.graph)

    def _stop_if_closed(self) -> None:
        """A build running here, between two conversions or builds: stop once closed."""
        if self.closed:
            raise JobCancelled(CLOSED)

    def close(self) -> None:
        """Cancel this LongWork's jobs and let go of the worker (it ends with its last user);
        no job is taken from now on."""
        with self._hold_lock:
            self.closed = True
            hold, self._hold = self._hold, None
        if hold is not None:
            hold.close()


__all__ = ["LongWork", "IN_WORKER"]
