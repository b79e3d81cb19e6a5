"""The explorer's worker process (hierviz/widget/worker.py): a fresh interpreter at a lower CPU
priority that answers compile-today, hv.measure and hv.tune jobs as this process would; a
child that fails to start, is killed or hangs fails its jobs with a WorkerError saying so, and
the next job starts a fresh one; a job that cannot go there is refused as Unsendable."""

from __future__ import annotations

import os
import signal
import sys
import time
import types
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

import pytest

import hierviz as hv
from hierviz.settings.compile_rules import compile_config
from hierviz import trt
from hierviz.widget.worker import HANG_S, START_S, Unsendable, Worker, WorkerError
from hierviz.partitioner.upstream.todays_compile import compile_today

from tests.clock import ManualClock, use_clock

from . import worker_helpers as helpers  # the worker imports it by this name too (it gets this sys.path)
from .worker_waits import wait_on_worker

WAIT_S = 120.0  # a safety net only: the steps wait on events (a file, a job answered)
BROKEN = (sys.executable, "-c", "import sys; sys.stderr.write('no worker here\\n'); sys.exit(3)")
SILENT = (sys.executable, "-c", "import sys\nwhile sys.stdin.buffer.read(65536):\n    pass")  # reads, never answers


@pytest.fixture(scope="module")
def two_blocks():
    model, inputs = helpers.model_and_inputs()
    return model, inputs, hv.capture(model, inputs)


@pytest.fixture
def worker(tmp_path, monkeypatch):
    monkeypatch.setenv(helpers.MARK, str(tmp_path / "compiling"))  # the child inherits it
    w = Worker()  # hang_s as a user gets it: the hang test moves a clock of its own past it
    yield w
    w.close()


def _started(path: Path, worker: Worker) -> None:
    wait_on_worker(path.exists, "the waiting compiler never started", lambda: worker.pid)


def _job_in_a_thread(worker: Worker, two_blocks) -> Future:
    """A waiting measure job sent from another thread: its future holds the answer, or whatever it raised."""
    _, inputs, gm = two_blocks
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(worker.run, gm, inputs, "measure", (helpers.SAME, helpers.WAITING))
    finally:
        pool.shutdown(wait=False)


def test_the_worker_answers_as_this_process_does(worker, two_blocks) -> None:
    _, inputs, gm = two_blocks
    m = worker.run(gm, inputs, "measure", (helpers.SAME, helpers.QUICK))
    here = hv.measure(hv.partition(gm, helpers.SAME), inputs, **helpers.QUICK)
    assert worker.pid != os.getpid() and os.getpriority(os.PRIO_PROCESS, worker.pid) >= 10
    group = Path(f"/proc/{worker.pid}/autogroup")  # Linux's per-session group: its own nice lowered too
    if group.exists() and Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1":
        assert group.read_text().split()[-1] == "19"
    assert m.outputs_match and m.iters == here.iters == 3
    assert list(m.per_subgraph["tag"]) == list(here.per_subgraph["tag"])
    if trt.available():
        for cfg in (hv.Config(min_block_size=1),
                    hv.Config(min_block_size=3, torch_executed_ops=("aten.relu.default",))):
            fast = compile_config(cfg)
            assert worker.run(gm, inputs, "compile_today", fast).stats == compile_today(gm, cfg).stats
    with pytest.raises(hv.ConfigError, match="budget"):  # a HiervizError raised there is raised here
        worker.run(gm, inputs, "tune", {"base": helpers.SAME, "budget": 0, "progress": False})
    assert worker.starts == 1  # the graph and the process reused across jobs


@pytest.mark.slow  # a fresh process or a worker of its own: seconds of CPU (make check leaves it out)
def test_a_killed_worker_fails_its_job_and_the_next_job_starts_a_fresh_one(worker, two_blocks, tmp_path) -> None:
    job = _job_in_a_thread(worker, two_blocks)
    _started(tmp_path / "compiling", worker)
    first = worker.pid
    os.kill(first, signal.SIGKILL)
    # the killed child's threads end at its nice 19: waited for while they could not run
    wait_on_worker(job.done, "the job still waits on a killed worker", lambda: first, could_run_s=30.0)
    got = job.exception()
    assert isinstance(got, WorkerError)
    assert str(got).startswith("the worker process was killed by SIGKILL") and "fresh one" in str(got)
    _, inputs, gm = two_blocks
    assert worker.run(gm, inputs, "measure", (helpers.SAME, helpers.QUICK)).outputs_match
    assert worker.starts == 2 and worker.pid != first


@pytest.mark.slow  # a fresh process or a worker of its own: seconds of CPU (make check leaves it out)
def test_a_hung_worker_is_killed_after_hang_s(worker, two_blocks, tmp_path, monkeypatch) -> None:
    from hierviz.widget import worker as worker_module

    clock = ManualClock()  # the worker's time.monotonic(): hang_s passes when the test says, not on this machine
    use_clock(monkeypatch, worker_module, clock)
    job = _job_in_a_thread(worker, two_blocks)
    _started(tmp_path / "compiling", worker)
    pid = worker.pid
    os.kill(pid, signal.SIGSTOP)  # no heartbeat any more
    end = time.monotonic() + WAIT_S
    while not job.done():  # a beat read after the stop puts the last word later: the clock moves on again
        assert time.monotonic() < end, "the job still waits on a stopped worker"
        clock.advance(START_S + worker.hang_s)
        wait([job], timeout=1.0)
    got = job.exception()
    assert isinstance(got, WorkerError)
    assert f"sent nothing for {HANG_S:.0f} s while it could run (hung): it was killed" in str(got)
    assert worker.pid is None
    # killed; a thread reaps it (its threads end at nice 19: waited for while they could not run)
    wait_on_worker(lambda: worker.wait_ended(0.0), "the killed worker was never reaped", lambda: pid, WAIT_S)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_starved_worker_is_not_hung_a_silent_one_that_could_run_is(two_blocks, monkeypatch) -> None:
    """The worker at nice 19 on a busy machine waits for a CPU most of the time: its heartbeat
    comes late, it is not killed however long that lasts; once it could run for hang_s and
    sent nothing, it is. The clock and the time it waited for a CPU are the test's."""
    from hierviz.widget import silence_watch, worker as worker_module

    clock = ManualClock()
    use_clock(monkeypatch, worker_module, clock)
    waited = [0.0]  # seconds the child's threads waited for a CPU, as Linux would say
    monkeypatch.setattr(silence_watch, "runqueue_wait_s", lambda pid: waited[0])
    _, inputs, gm = two_blocks
    w = Worker(command=SILENT)
    try:
        job = w.submit(gm, inputs, "blockers", helpers.SAME)
        for _ in range(10):  # 40 minutes without a word, every second of it waiting for a CPU
            clock.advance(START_S + HANG_S)
            waited[0] += START_S + HANG_S
            assert not w.kill_if_hung()
        assert w.pid is not None and not job.done.is_set()
        clock.advance(HANG_S + 1.0)  # it could run, and sent nothing
        with pytest.raises(WorkerError, match=f"sent nothing for {HANG_S:.0f} s while it could run \\(hung\\)"):
            job.result()
        assert w.pid is None
    finally:
        w.close()


def test_a_worker_that_cannot_start_says_why(two_blocks) -> None:
    _, inputs, gm = two_blocks
    broken = Worker(command=BROKEN)
    with pytest.raises(WorkerError, match=r"exited with status 3 \(no worker here\)"):
        broken.run(gm, inputs, "compile_today", hv.Config())


def test_a_job_that_cannot_go_to_the_worker_is_unsendable(worker, two_blocks) -> None:
    _, inputs, gm = two_blocks
    lam = hv.Config(priority=("same",), support={"same": hv.support.where(lambda n: True)})
    with pytest.raises(Unsendable, match="its settings do not pickle"):
        worker.run(gm, inputs, "measure", (lam, helpers.QUICK))
    only_here = types.ModuleType("hierviz_test_only_here")  # importable here, not in the worker
    exec("def compiler(gm, inputs):\n    return gm\n", only_here.__dict__)
    sys.modules[only_here.__name__] = only_here
    try:
        with pytest.raises(Unsendable, match="the worker process could not load it"):
            worker.run(gm, inputs, "measure", (helpers.SAME, {"compilers": {"same": only_here.compiler}}))
    finally:
        del sys.modules[only_here.__name__]


def test_what_times_runs_alone_in_the_worker(two_blocks, tmp_path, monkeypatch) -> None:
    """Every job's start and end, as the worker records them: compile-today, blockers and
    builds sent from several threads at once beside measurements and a search; no timing job
    ("measure", "tune") overlaps any other job, and every job ran."""
    _, inputs, gm = two_blocks
    log = tmp_path / "jobs.log"
    monkeypatch.setenv("HIERVIZ_WORKER_JOB_LOG", str(log))  # the child inherits it
    w = Worker(hang_s=60.0)
    jobs = [("compile_today", compile_config(hv.Config(min_block_size=k))) for k in (1, 2, 3)]
    jobs += [("measure", (helpers.SAME, helpers.QUICK))] * 3
    jobs += [("blockers", helpers.SAME), ("numerics", (helpers.SAME, {"compilers": helpers.QUICK["compilers"]}))]
    jobs += [("tune", {"base": helpers.SAME, "budget": 2, "progress": False, "space": {"min_block_size": [1, 2]},
                       "measure": helpers.QUICK})]
    jobs += [("compile_today", compile_config(hv.Config(min_block_size=k))) for k in (4, 5)]
    pool = ThreadPoolExecutor(max_workers=len(jobs))  # each job from its own thread, all at once
    try:
        sent = [(kind, pool.submit(w.run, gm, inputs, kind, payload)) for kind, payload in jobs]
        # whatever a job raised
        wait_on_worker(lambda: all(job.done() for _, job in sent), "a job is still running", lambda: w.pid,
                       could_run_s=300.0)
        errors = [(kind, exc) for kind, job in sent if (exc := job.exception()) is not None]
    finally:
        w.close()
        pool.shutdown(wait=False)
    assert not errors, errors
    rows = [line.split() for line in log.read_text().splitlines()]
    spans = [(kind, float(a), float(b)) for kind, a, b in rows]
    assert sorted(k for k, _, _ in spans) == sorted(k for k, _ in jobs)
    for i, (kind, start, end) in enumerate(spans):
        if kind not in ("measure", "tune"):
            continue
        for j, (other, s2, e2) in enumerate(spans):
            if i != j:
                assert e2 <= start or s2 >= end, f"{kind} {start:.3f}-{end:.3f} overlaps {other} {s2:.3f}-{e2:.3f}"


def test_a_subject_is_its_graph_and_its_inputs_and_ids_are_never_reused(worker, two_blocks) -> None:
    """The same graph with other inputs is another subject; inputs the caller dropped stay held
    while their graph lives, so a new object cannot take their id and be mistaken for them;
    the graph's death drops its subjects (the child is told)."""
    import copy
    import gc

    import torch

    _, inputs, gm = two_blocks
    graph = copy.deepcopy(gm)
    sent = (torch.randn(1, 3, 8, 8),)
    worker.run(graph, sent, "blockers", helpers.SAME)
    worker.run(graph, inputs, "blockers", helpers.SAME)
    assert sorted(len(v) for v in worker._subjects.values()) == [2, 2] and len(worker._subjects) == 2
    old = id(sent)
    del sent
    gc.collect()
    made = [(torch.randn(1, 3, 8, 8),) for _ in range(2000)]
    assert old not in {id(m) for m in made}  # held by the worker's entry: no new tuple can be at that id
    del graph
    gc.collect()
    assert len(worker._subjects) == 0 and len(worker._dropped) == 2
