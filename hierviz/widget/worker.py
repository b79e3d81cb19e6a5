"""The explorer's worker process: one child interpreter that does the explorers' long work
(compile-today, hv.measure, hv.tune), so that none of it holds the kernel's GIL.

The child is a fresh interpreter (running hierviz.widget.worker_main's `main()`, never a fork: safe
where forking a process that runs torch threads is not, and it never re-runs the user's
script) in a session of its own, at a lower CPU priority (it calls `os.nice`, so its compilers,
TorchInductor's g++ runs, inherit it). It is started by the first job and sent this process's
`sys.path`; each graph (as plain data, hierviz/capturing/graph_codec.py, which names the modules
that register its custom ops: the child imports them) and its example inputs are sent once,
before its first job, and dropped there when the graph is garbage-collected here; each job then
carries only its settings; a graph whose custom op is defined in `__main__` is not sent (Unsendable
naming the op). One worker serves the process (`Worker.shared()`); each
Explorer holds it through a `Hold` of its own (`worker.hold()`), whose `close()` cancels only that
Explorer's jobs, and the child ends when the last hold is closed. Jobs run in the child one thread
each, and what times runs alone there (worker_main.py); their answers, progress reports and a
heartbeat come back as pickles over its stdout, read here by one thread. Anything the child
prints goes to its stderr, kept in a temporary file for the message when it dies.

A child that exits, is killed, or sends nothing for `hang_s` seconds of the time it could run
(then it is killed) fails every job waiting on it with a WorkerError that says so; the next job
starts a fresh child. The time its threads waited for a CPU does not count (silence_watch.py):
at its low priority on a busy machine its heartbeat may come minutes late, and it is not hung.
`close()` (the interpreter's exit, the last hold closed) ends it at once: its whole session is
killed (a build inside TensorRT, its compilers) before `close()` returns, and a thread of its
own reaps it (no zombie stays; nothing waits for a 1 GB process to tear down).
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Sequence

from hierviz.errors import HiervizError
from hierviz.capturing.custom_op_sources import not_importable, unavailable_text
from hierviz.capturing.graph_codec import pack_graph
from hierviz.widget.silence_watch import SilenceWatch

logger = logging.getLogger(__name__)
# what pickling raises for something that does not pickle: a function or class not found by its
# name (PicklingError), a local object (AttributeError), an object of a type that refuses (TypeError),
# a structure nested too deep (RecursionError)
PICKLING_ERRORS: tuple[type[Exception], ...] = (pickle.PicklingError, AttributeError, TypeError, RecursionError)
# what reading another process's pickle raises: a module or name this process cannot import, a
# truncated or foreign stream, a state its class here does not take (torch's tensors: RuntimeError)
UNPICKLING_ERRORS: tuple[type[Exception], ...] = (ImportError, AttributeError, EOFError, pickle.UnpicklingError,
                                                  TypeError, ValueError, RuntimeError)
# the child's stdout ending: at a message's boundary (EOFError), inside one (a child killed
# mid-message), or closed here
_STREAM_ENDED: tuple[type[Exception], ...] = (EOFError, pickle.UnpicklingError, OSError, ValueError)

# the child lowers its CPU priority before it imports torch (importing hierviz loads it: a second
# of CPU that must not compete with the kernel either): cpu_priority.py, which imports only os,
# is run as a file, then worker_main
_BOOT = f"""
import runpy
runpy.run_path({str(Path(__file__).with_name("cpu_priority.py"))!r}, run_name="__lower__")
from hierviz.widget.worker_main import main
main()
"""
COMMAND = (sys.executable, "-c", _BOOT)
SUPERSEDED = "a newer build of the same explorer took its place"
HANG_S = 120.0  # no word from the child for this long while it could run (it beats every s): hung, killed
START_S = 120.0  # the longest the child may take to import hierviz and read the graph (of the time it could run)
EXIT_REAP_S = 2.0  # at the interpreter's exit, the longest it waits for killed children to be reaped
_LIVE: "weakref.WeakSet[Worker]" = weakref.WeakSet()


class WorkerError(HiervizError):
    """The worker process could not start, died, was killed or stopped answering."""


class JobCancelled(WorkerError):
    """The job was cancelled before it answered (its explorer closed, or a newer build of the
    same explorer took its place): nothing to show."""


class Unsendable(Exception):
    """A job the worker cannot take (it does not pickle here, or the child cannot load it):
    run it in this process instead; `str()` says why. `op`: the graph's custom op the child
    cannot register (defined in `__main__`), so no job on this graph can go there; else None."""

    def __init__(self, message: str, op: str | None = None) -> None:
        super().__init__(message)
        self.op = op


class _Job:
    """One job sent to the child: `done` is set when it is answered (or failed); `result()`
    waits for it (the GIL free meanwhile) and gives the answer or raises."""

    def __init__(self, progress: Callable[..., None] | None, worker: "Worker | None" = None) -> None:
        self.done = threading.Event()
        self.progress = progress
        self.status = ""  # how it ended: "ok", "raised", "unreadable", "cancelled", "failed" or "error"
        self.answer: Any = None
        self.proc: Any = None  # the child it was sent to
        self.key = 0
        self.worker = worker

    def result(self) -> Any:
        worker = self.worker
        assert worker is not None
        while not self.done.wait(0.5):
            worker.kill_if_hung(self.proc)
        return worker._answer(self)


class Worker:
    """The parent's handle on one worker process (see the module docstring).
    `run(graph, example_inputs, kind, payload)` blocks until the child answers (the GIL is free
    meanwhile) and returns the answer; several threads may run jobs at once. `command` is the
    child's command line (a test can pass one that fails); `hang_s` how long a child that
    could run and sends nothing lives."""

    def __init__(self, *, command: Sequence[str] | None = None, hang_s: float = HANG_S) -> None:
        self.command = list(command or COMMAND)
        self.hang_s = hang_s
        self._lock = threading.RLock()  # starting, stopping, writing requests
        self._proc: subprocess.Popen | None = None
        self._stderr: Any = None
        self._jobs: dict[int, _Job] = {}
        self._ids = itertools.count(1)
        self._silence = SilenceWatch(lambda: time.monotonic())  # (the module's clock, which a test replaces)
        self._failure: str | None = None
        # (id(graph), id(inputs)) -> (its number in the child, the inputs): the inputs are held, so their
        # id is not reused while the entry lives; the graph is watched and the entry dropped when it dies
        self._subjects: dict[tuple[int, int], tuple[int, Any]] = {}
        self._holds = 0  # open Holds: the child ends when the last one closes
        self._finalizers: list[Any] = []
        self._dropped: list[int] = []  # subjects whose graph was collected here: the child drops them too
        self.starts = 0  # children started so far
        self._ending: set[subprocess.Popen] = set()  # children killed and not yet reaped
        _LIVE.add(self)

    @classmethod
    def shared(cls) -> "Worker":
        """The process's one worker (its child started by the first job, ended at exit)."""
        with _shared_lock:
            if not _shared:
                _shared.append(cls())
            return _shared[0]

    @classmethod
    def shared_if_made(cls) -> "Worker | None":
        """The process's one worker when `shared()` made it, else None (making none)."""
        with _shared_lock:
            return _shared[0] if _shared else None

    @property
    def pid(self) -> int | None:
        """The running child's process id, else None."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def run(self, graph: Any, example_inputs: Any, kind: str, payload: Any = None,
            progress: Callable[..., None] | None = None) -> Any:
        """The child's answer to one job on `graph`: `kind` is "compile_today", "measure",
        "build", "numerics", "blockers" or "tune" (see worker_main.py); `progress(*args)`
        receives its progress reports. A HiervizError the job raised in the child is raised here
        again; WorkerError when the child fails; Unsendable when the job cannot go to the child."""
        return self.submit(graph, example_inputs, kind, payload, progress).result()

    def submit(self, graph: Any, example_inputs: Any, kind: str, payload: Any = None,
               progress: Callable[..., None] | None = None) -> _Job:
        """Send one job and return at once: its `result()` waits for the answer (see run)."""
        try:
            request = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except PICKLING_ERRORS as exc:  # e.g. hv.support.where(lambda ...)
            raise Unsendable(f"its settings do not pickle ({type(exc).__name__}: {exc})") from None
        job = _Job(progress, self)
        with self._lock:
            data = None if (id(graph), id(example_inputs)) in self._subjects else self._packed(graph, example_inputs)
            self._ensure_started()  # (after the graph is found sendable: no child is started for nothing)
            subject = self._subject(graph, example_inputs, data)
            job.key = key = next(self._ids)
            job.proc = self._proc
            self._jobs[key] = job
            self._write((key, kind, (subject, request)))
        return job

    def cancel(self, job: _Job, why: str = "the worker process was closed") -> None:
        """Fail `job` here at once with JobCancelled(`why`) and tell the child to drop it (a job
        not started never runs; a measurement stops at its next progress report, a build before
        its next conversion or build)."""
        with self._lock:
            if self._jobs.pop(job.key, None) is None:
                return  # answered already
            if self._proc is job.proc:
                self._write((0, "cancel", job.key))
        job.status, job.answer = "cancelled", why
        job.done.set()

    def hold(self) -> "Hold":
        """A handle of one user (an Explorer) on this worker: its jobs, and its close."""
        with self._lock:
            self._holds += 1
        return Hold(self)

    def _release(self) -> None:
        with self._lock:
            self._holds -= 1
            if self._holds <= 0:
                self._holds = 0
                self.close()

    def kill_if_hung(self, proc: subprocess.Popen | None = None) -> bool:
        """When the child `proc` (the running one by default) has sent nothing for `hang_s` of
        the time it could run, kill it and fail its jobs; whether it did."""
        proc = self._proc if proc is None else proc
        if proc is None or self._proc is not proc or self._silence.silent_s() <= self.hang_s:
            return False
        self._fail(f"the worker process sent nothing for {self.hang_s:.0f} s while it could run (hung): it was "
                   "killed; the next job starts a fresh one", proc)
        return True

    def _answer(self, job: _Job) -> Any:
        if job.status == "ok":
            return job.answer
        if job.status == "unreadable":
            raise Unsendable(f"the worker process could not load it ({job.answer})")
        if job.status == "raised":  # a HiervizError, as the user would see it here
            raise job.answer
        if job.status == "cancelled":
            raise JobCancelled(job.answer)
        if job.status == "failed":
            raise WorkerError(job.answer)
        raise WorkerError(f"the worker process failed: {job.answer}")

    # ------------------------------------------------------------------ the child
    def _ensure_started(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        self._stop()
        self._failure = None
        self._stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # the folder holding this hierviz
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        try:
            self._proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, env=env, start_new_session=True)
        except OSError as exc:
            self._proc = None
            raise WorkerError(f"could not start the worker process ({exc})") from exc
        self.starts += 1
        self._silence.watch(self._proc.pid, START_S - self.hang_s)  # importing torch takes a while
        threading.Thread(target=self._read, args=(self._proc,), name="hierviz-worker-reader", daemon=True).start()
        self._write((0, "path", list(sys.path)))

    def _packed(self, graph: Any, example_inputs: Any) -> bytes:
        """The message data of (graph, example inputs); Unsendable when the child could not
        read it: a custom op defined in `__main__` (its `op`), or what does not pickle."""
        packed = pack_graph(graph)
        lost = not_importable(packed["ops"])
        if lost:
            raise Unsendable(unavailable_text(lost), op=lost[0])
        try:
            return pickle.dumps((packed, example_inputs), protocol=pickle.HIGHEST_PROTOCOL)
        except PICKLING_ERRORS as exc:  # e.g. inputs holding an object that does not pickle
            raise Unsendable(f"the graph or example inputs do not pickle ({type(exc).__name__}: {exc})") from None

    def _subject(self, graph: Any, example_inputs: Any, data: bytes | None = None) -> int:
        """The child's number for (graph, example inputs), sent first (`data`, else packed now)
        when new to this child."""
        while self._dropped:
            self._write((0, "drop", self._dropped.pop()))
        key = (id(graph), id(example_inputs))
        if key in self._subjects:
            return self._subjects[key][0]
        number = next(self._ids)
        self._write((number, "graph", self._packed(graph, example_inputs) if data is None else data))
        self._subjects[key] = (number, example_inputs)
        self._finalizers.append(weakref.finalize(graph, self._forget, key, number))
        return number

    def _forget(self, key: tuple[int, int], number: int) -> None:
        with self._lock:
            got = self._subjects.get(key)
            if got is not None and got[0] == number:
                del self._subjects[key]
                self._dropped.append(number)

    def _write(self, message: tuple) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            return  # stopped meanwhile: its jobs are failed already
        try:
            pickle.dump(message, proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.flush()
        except (OSError, ValueError):
            pass  # the child is gone: the reader fails every job with its last words

    def _read(self, proc: subprocess.Popen) -> None:
        """The reader thread: hand each answer to its job; when the child's stdout ends, fail
        the jobs still waiting with why."""
        try:
            self._read_answers(proc)
        except Exception:
            # the thread's boundary: whatever stops the reader, the jobs waiting are failed below
            # (not left until the hang check), and what stopped it is logged
            logger.error("the worker's reader thread stopped", exc_info=True)
        self._fail(self._failure or self._death(proc), proc)

    def _read_answers(self, proc: subprocess.Popen) -> None:
        """Hand each answer the child sends to its job, until its stdout ends."""
        out = proc.stdout
        assert out is not None
        while True:
            try:
                key, kind, payload = pickle.load(out)
            except _STREAM_ENDED:  # EOF, or a child killed mid-message
                break
            if self._proc is proc:  # (not the last words of a child already replaced)
                self._silence.heard()
            job = self._jobs.get(key)
            if kind == "beat" or job is None:
                continue
            if kind == "progress":
                if job.progress is not None:
                    try:
                        job.progress(*payload)
                    except Exception:  # a progress display must not stop the reader: logged, and reading goes on
                        logger.error("a worker job's progress callback failed", exc_info=True)
                continue
            try:
                answer = pickle.loads(payload) if kind in ("ok", "raised") else payload
            except UNPICKLING_ERRORS as exc:  # the answer names something this process cannot load
                kind, answer = "error", f"its answer could not be read here ({type(exc).__name__}: {exc})"
            except Exception as exc:  # an answer's own reconstructor failed: that job fails, the reader goes on
                logger.error("a worker job's answer could not be read", exc_info=True)
                kind, answer = "error", f"its answer could not be read here ({type(exc).__name__}: {exc})"
            self._jobs.pop(key, None)
            job.status, job.answer = kind, answer
            job.done.set()

    def _death(self, proc: subprocess.Popen) -> str:
        try:
            code = proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None and code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code}" if code is not None else "stopped answering"
        return f"the worker process {how}{self._last_words()}; the next job starts a fresh one"

    def _last_words(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            lines = [ln for ln in self._stderr.read().decode(errors="replace").strip().splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return f" ({lines[-1].strip()[:300]})" if lines else ""

    def _fail(self, why: str, proc: Any) -> None:
        """End the child `proc` (when it is still the current one) and fail every job sent to
        it with `why`."""
        with self._lock:
            if self._proc is proc:
                self._failure = why
                self._stop()
            for key, job in list(self._jobs.items()):
                if job.proc is proc and self._jobs.pop(key, None) is not None:
                    job.status, job.answer = "failed", why
                    job.done.set()

    def _stop(self) -> None:
        """End the child at once: its stdin closed and its whole session killed (its compilers
        too); a thread reaps it."""
        proc, self._proc = self._proc, None
        for fin in self._finalizers:
            fin.detach()
        self._finalizers.clear()
        self._subjects.clear()
        self._dropped.clear()
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (OSError, AttributeError):
            try:
                proc.kill()
            except OSError:
                pass
        self._ending.add(proc)
        threading.Thread(target=self._reap, args=(proc,), name="hierviz-worker-reaper", daemon=True).start()

    def _reap(self, proc: subprocess.Popen) -> None:
        proc.wait()
        self._ending.discard(proc)

    def wait_ended(self, timeout: float) -> bool:
        """Wait (at most `timeout` s) until every child this worker killed is reaped; whether they are."""
        end = time.monotonic() + timeout
        for proc in list(self._ending):
            try:
                proc.wait(timeout=max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                return False
        return True

    def close(self) -> None:
        """End the child now; jobs waiting on it fail ("closed")."""
        with self._lock:
            if self._proc is not None:
                self._fail("the worker process was closed", self._proc)


class Hold:
    """One user's handle on a Worker (`Worker.hold()`): `submit` / `run` as the worker's, and
    `close()`, which cancels this handle's jobs still waiting or running (they fail "closed")
    and releases it; other handles' jobs go on, and the child ends with the last handle. A
    build submitted through a handle cancels the handle's build still running (only the
    newest is wanted: the older stops before its next conversion or build)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self._jobs: "weakref.WeakSet[_Job]" = weakref.WeakSet()
        self._lock = threading.Lock()
        self._build: _Job | None = None  # this handle's latest build
        self.closed = False

    def submit(self, graph: Any, example_inputs: Any, kind: str, payload: Any = None,
               progress: Callable[..., None] | None = None) -> _Job:
        older = None
        with self._lock:
            if self.closed:
                raise WorkerError("the worker process was closed")
            job = self.worker.submit(graph, example_inputs, kind, payload, progress)
            self._jobs.add(job)
            if kind == "build":
                older, self._build = self._build, job
        if older is not None:
            self.worker.cancel(older, SUPERSEDED)
        return job

    def run(self, graph: Any, example_inputs: Any, kind: str, payload: Any = None,
            progress: Callable[..., None] | None = None) -> Any:
        return self.submit(graph, example_inputs, kind, payload, progress).result()

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            jobs = list(self._jobs)
        for job in jobs:
            self.worker.cancel(job)
        self.worker._release()


_shared: list[Worker] = []
_shared_lock = threading.Lock()


@atexit.register
def _close_all() -> None:
    """At exit: every worker process ends at once, killed; each is reaped if it is gone within
    EXIT_REAP_S (a process that exits leaves no zombie to a parent that may never reap it)."""
    workers = list(_LIVE)
    for worker in workers:
        worker.close()
    end = time.monotonic() + EXIT_REAP_S
    for worker in workers:
        worker.wait_ended(max(0.0, end - time.monotonic()))


__all__ = ["Worker", "Hold", "WorkerError", "JobCancelled", "Unsendable", "COMMAND", "HANG_S", "SUPERSEDED"]
