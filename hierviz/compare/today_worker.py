"""Computing the explorer's "torch_tensorrt.compile today" line in a child process, so that
Torch-TensorRT's fast partitioner (as long as partitioning, and pure Python) never competes
with the explorer's own updates for the GIL.

One child serves every explorer of the process (`TodayWorker.shared()`). The child is a fresh interpreter (`python -m hierviz.compare.today_worker`, never a fork, so
it is safe wherever forking a process that runs torch threads is not, and it never re-runs
the user's script). It receives each captured graph once, as plain data
(hierviz/graphdata.py), then one (graph, Config) per request, and answers each with the fast
partition's counts (`TodayCounts`) or why there is none. The protocol is pickles over the
child's stdin and stdout; anything the child prints goes to its stderr, kept in a temporary
file for the message when it dies. It ends when the parent closes its stdin (the parent
exiting included) or calls `close()`.
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any, Callable, Sequence

from torch.fx import GraphModule

from hierviz.config import Config
from hierviz.compare.partition_cache import cached_partition
from hierviz.compare.today_counts import TodayCounts, counts_of
from hierviz.errors import HiervizError
from hierviz.graphdata import pack_graph, unpack_graph
from hierviz.partitioner.compiled import compile_today

COMMAND = (sys.executable, "-m", "hierviz.compare.today_worker")


class WorkerError(HiervizError):
    """The child process could not start, died, or answered with an unexpected error."""


class TodayWorker:
    """One child process computing compile-today counts (see the module docstring) for the
    graphs it is given, each sent once and dropped when the graph is garbage-collected.
    `run(graph, config)` blocks until the answer comes, waiting on a pipe (the GIL is free
    meanwhile); calls are served one at a time, and one no longer wanted when its turn comes
    is skipped, so quick changes do not queue up lines nobody sees. `command` is the child's command line
    (default `COMMAND`; a test can pass one that fails). `shared()` is the process's one
    worker, so that many explorers start one child."""

    def __init__(self, command: Sequence[str] | None = None) -> None:
        self.command = list(command or COMMAND)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._stderr: Any = None
        self._sent: dict[int, Any] = {}  # id(graph) -> weakref.finalize dropping it
        self._dropped: list[int] = []

    def run(self, graph: GraphModule, config: Config,
            wanted: Callable[[], bool] = lambda: True) -> tuple[TodayCounts | None, str] | None:
        """(the fast partition's counts of `graph` with `config`'s settings, '') or (None,
        why it is left out); WorkerError when the child fails. None, at once, when `wanted()`
        says no once the child is free (a line for a setting no longer shown)."""
        request = pickle.dumps(("partition", id(graph), config))  # a setting that does not pickle fails here
        with self._lock:
            if not wanted():
                return None
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            while self._dropped:  # graphs collected since: the child lets them go (their ids may be reused)
                key = self._dropped.pop()
                self._sent.pop(key, None)
                self._ask(pickle.dumps(("drop", key, None)))
            if id(graph) not in self._sent:
                data = pickle.dumps(("graph", id(graph), pack_graph(graph)), protocol=pickle.HIGHEST_PROTOCOL)
                kind, payload = self._ask(data)
                if kind != "ok":
                    raise WorkerError(f"the compile-today worker could not read the graph: {payload}")
                self._sent[id(graph)] = weakref.finalize(graph, self._dropped.append, id(graph))
            kind, payload = self._ask(request)
        if kind != "ok":
            raise WorkerError(f"the compile-today worker failed: {payload}")
        return payload

    def _start(self) -> None:
        self.close()
        self._stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # the folder holding this hierviz
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        try:
            self._proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, env=env)
        except OSError as exc:
            self._proc = None
            raise WorkerError(f"could not start the compile-today worker ({exc})") from exc

    def _ask(self, request: bytes) -> tuple[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(request)
            proc.stdin.flush()
            return pickle.load(proc.stdout)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            words = self._last_words()
            self.close()
            raise WorkerError(f"the compile-today worker stopped ({type(exc).__name__}){words}") from exc

    def _last_words(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f": {lines[-1]}" if lines else ""

    def close(self) -> None:
        """End the child (it exits when its stdin closes; killed if it does not)."""
        proc, self._proc = self._proc, None
        for fin in self._sent.values():
            fin.detach()
        self._sent.clear()
        self._dropped.clear()
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=0.5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()

    @classmethod
    def shared(cls) -> "TodayWorker":
        """The process's one worker (started on its first `run`, ended at exit)."""
        with _shared_lock:
            if not _shared:
                worker = cls()
                atexit.register(worker.close)
                _shared.append(worker)
            return _shared[0]


_shared: list[TodayWorker] = []
_shared_lock = threading.Lock()


def main() -> None:
    """The child: read requests from stdin, answer on the original stdout (see the module
    docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupting the kernel (its process group) is not for us
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # prints (of torch_tensorrt's import, ...) must not reach the protocol
    requests = sys.stdin.buffer
    graphs: dict[int, GraphModule] = {}
    while True:
        try:
            kind, key, payload = pickle.load(requests)
        except EOFError:
            return
        try:
            answer: Any = None
            if kind == "graph":
                graphs[key] = unpack_graph(payload)
            elif kind == "drop":
                graphs.pop(key, None)
            else:
                fast, why = compile_today(graphs[key], payload, cached_partition)
                answer = (None if fast is None else counts_of(fast), why)
            reply: tuple[str, Any] = ("ok", answer)
        except Exception as exc:  # noqa: BLE001 - answered, the parent decides
            reply = ("error", f"{type(exc).__name__}: {exc}")
        pickle.dump(reply, answers)
        answers.flush()


if __name__ == "__main__":
    main()
