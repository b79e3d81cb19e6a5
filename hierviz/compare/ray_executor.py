"""Running sweep rows and tune trials as Ray tasks, on a local Ray or a cluster.

`hv.sweep(..., executor="ray")` and `hv.tune(..., executor="ray")` come here. The captured
graph and the example inputs go to Ray's object store once (`ray.put`), not once per task;
each worker unpacks the graph once and keeps it, so its partition and compile caches work
across the tasks it runs. A task asks for one GPU when the cluster has GPUs, one CPU
otherwise. A worker that dies (a crashing compiler, the OOM killer) makes that row
`failed`; the other rows go on.

The graph travels as plain data (hierviz/capturing/graph_codec.py: `pack_graph`, `unpack_graph`), since
an exported graph cannot be pickled as it is.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from typing import Any, Callable, Iterator, Sequence

from torch.fx import GraphModule

from hierviz.errors import ConfigError
from hierviz.capturing.graph_codec import pack_graph, unpack_graph

RAY_HINT = "install Ray with `pip install 'hierviz[ray]'` (make setup installs it)"


# ----------------------------------------------------------------------------- Ray
def is_ray(executor: Any) -> bool:
    """Whether `executor` asks for Ray: "ray", a Ray address ("ray://host:10001", "auto",
    "host:6379"), or the `ray` module itself (an already initialised Ray)."""
    if isinstance(executor, str):
        return True
    return getattr(executor, "__name__", None) == "ray" and hasattr(executor, "remote")


# "ray://head:10001", "head-node:6379", "10.0.0.5:6379", "[::1]:6379"
_ADDRESS = re.compile(r"(ray://)?(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9_.-]+):\d+\Z")


def check_executor(executor: Any) -> None:
    """ConfigError unless `executor` is a way to reach Ray that hierviz understands: "ray" or
    "local" (a local Ray), "auto" (the cluster of this node), an address (ray://host:10001,
    host:6379) or the initialised `ray` module. Checked before the model is captured."""
    if not isinstance(executor, str):
        if is_ray(executor):
            return
        raise ConfigError(f"executor must be 'ray' or a Ray address, not {type(executor).__name__}")
    text = executor.strip()
    if text in ("ray", "local", "auto") or _ADDRESS.match(text):
        return
    raise ConfigError(f"executor {executor!r:.60} is not 'ray' (a local Ray), 'auto' (the Ray cluster this "
                      "machine is part of) or a Ray address such as ray://head-node:10001 or head-node:6379.")


def _import_ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ConfigError(f"executor='ray' needs Ray, which is not installed: {RAY_HINT}.") from None


def connect(executor: Any) -> Any:
    """The `ray` module, initialised: an already running Ray is used as it is; "ray" starts a
    local one (all this machine's CPUs and GPUs) unless one is running; another string is
    the address of a cluster (`ray.init(address=...)`). Hierviz leaves Ray running after the
    call (the next sweep starts faster); `ray.shutdown()` stops it."""
    if not isinstance(executor, str) and not is_ray(executor):
        raise ConfigError(f"executor must be a concurrent.futures.Executor, 'ray' or a Ray address, "
                          f"not {type(executor).__name__}")
    ray = _import_ray()
    if ray.is_initialized():
        return ray
    address = None if executor in ("ray", "local") or not isinstance(executor, str) else executor
    try:
        start_ray(ray, address=address)
    # no cluster at that address (ConnectionError), a start that timed out, Ray's own errors
    except (OSError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
        raise ConfigError(f"could not start or reach Ray ({address or 'local'}): {type(exc).__name__}: "
                          f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}. Check the address "
                          "(ray://head-node:10001, or 'auto' on a cluster node) or call ray.init() yourself.") from None
    return ray


def start_ray(ray: Any, attempts: int = 3, **kwargs: Any) -> None:
    """`ray.init(**kwargs)`, quietly, tried up to `attempts` times for a local Ray: on a busy
    machine its start can time out (the raylet waits a fixed 15 s for the dashboard agent,
    ray-project/ray#65983) and succeed next time, when the agent's imports are in the file cache.

    Ray's driver replaces `builtins.print` with its progress-bar-safe print the first time it
    handles a worker's output (its module ray.experimental.tqdm_ray, unless RAY_TQDM_PATCH_PRINT=0).
    hierviz draws no Ray progress bars, and a replaced print changes what dynamo traces: a
    model's `print` would then break its graph inside Ray's code. So the Ray hierviz starts
    leaves print alone (a value the user set is kept)."""
    os.environ.setdefault("RAY_TQDM_PATCH_PRINT", "0")
    options = {"ignore_reinit_error": True, "log_to_driver": False, "include_dashboard": False,
               "logging_level": "ERROR", **kwargs}
    local = kwargs.get("address") in (None, "local")
    for attempt in range(1, attempts + 1):
        try:
            ray.init(**options)
            return
        except Exception:
            if not local or attempt == attempts:
                raise
            ray.shutdown()


class WorkerDied(Exception):
    """A Ray task's worker process died before returning."""


# Per worker process: unpacked graphs by the object-store id of their packed form.
_GRAPHS: dict[str, GraphModule] = {}
_GRAPHS_LOCK = threading.Lock()


def _worker_graph(packed_ref: list, inputs: Any) -> GraphModule:
    ray = importlib.import_module("ray")
    ref = packed_ref[0]
    key = ref.hex()
    with _GRAPHS_LOCK:
        gm = _GRAPHS.get(key)
        if gm is None:
            gm = unpack_graph(ray.get(ref), inputs)
            _GRAPHS.clear()  # one graph per worker at a time: a new sweep replaces the last one
            _GRAPHS[key] = gm
    return gm


def _remote_call(func: Callable[..., Any], packed_ref: list, inputs: Any, *args: Any) -> Any:
    """Runs on a worker: `func(graph, example_inputs, *args)` with the worker's copy of the graph."""
    import warnings

    gm = _worker_graph(packed_ref, inputs)
    with warnings.catch_warnings():  # they are in the rows (Measurement.warnings), not the worker's log
        warnings.simplefilter("ignore")
        return func(gm, inputs, *args)


class RayRunner:
    """Submits calls of a function over one graph as Ray tasks and yields their results as
    they finish."""

    def __init__(self, executor: Any, gm: GraphModule, example_inputs: Any) -> None:
        self.ray = connect(executor)
        resources = self.ray.cluster_resources()
        self.gpus = int(resources.get("GPU", 0))
        self.cpus = int(resources.get("CPU", 1))
        self.slots = max(1, self.gpus if self.gpus else self.cpus)
        self._graph_ref = self.ray.put(pack_graph(gm))   # once, whatever the number of tasks
        self._inputs_ref = self.ray.put(example_inputs)
        options = {"num_gpus": 1, "num_cpus": 1} if self.gpus else {"num_cpus": 1}
        self._task = self.ray.remote(max_retries=0, **options)(_remote_call)

    @property
    def resources(self) -> str:
        return f"{self.gpus} GPU task slot(s)" if self.gpus else f"{self.cpus} CPU task slot(s)"

    def submit(self, func: Callable[..., Any], *args: Any) -> Any:
        return self._task.remote(func, [self._graph_ref], self._inputs_ref, *args)

    def wait(self, pending: Sequence[Any]) -> Iterator[tuple[Any, Any, Exception | None]]:
        """(ref, result or None, error or None) for each pending ref, as they finish.
        A dead worker gives WorkerDied; an exception in the task is re-raised as it was."""
        ray = self.ray
        left = list(pending)
        while left:
            done, left = ray.wait(left, num_returns=1)
            ref = done[0]
            try:
                yield ref, ray.get(ref), None
            except ray.exceptions.RayTaskError as exc:
                cause = exc.as_instanceof_cause() if hasattr(exc, "as_instanceof_cause") else exc
                yield ref, None, getattr(exc, "cause", None) or cause
            except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                    getattr(ray.exceptions, "OutOfMemoryError", ray.exceptions.WorkerCrashedError),
                    ray.exceptions.TaskUnschedulableError, ray.exceptions.RayError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                yield ref, None, WorkerDied(f"the Ray worker running it died ({type(exc).__name__}: {first[:200]})")


__all__ = ["is_ray", "connect", "start_ray", "RayRunner", "WorkerDied"]
