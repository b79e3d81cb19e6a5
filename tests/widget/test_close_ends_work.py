"""Closing an Explorer ends its work: its worker process and every process of the worker's
session are killed before `close()` returns (a build held inside TensorRT's conversion
included), are reaped (no zombie stays), and nothing starts them again, not even a build the
Explorer had queued behind the held one. The processes are counted: this process's children,
and the worker's session. A closed Explorer's LongWork takes no job (none goes to a worker,
none runs here), and a build it runs in this process stops before its next conversion."""

from __future__ import annotations

import os
import sys
import time
import types
from pathlib import Path

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.widget import Explorer
from hierviz.widget.long_work import LongWork
from hierviz.widget.worker import JobCancelled, Worker
from tests.building.models import made
from tests.widget.held_build import MARK, HeldBuild, held_in_new_processes

from . import worker_helpers as helpers
from .worker_waits import wait_on_worker

needs_rtx = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                               reason="needs TensorRT-RTX, which builds engines on the CPU")


@pytest.fixture(scope="module")
def two_blocks():
    model, inputs = helpers.model_and_inputs()
    return model, inputs, hv.capture(model, inputs)

WAIT_S = 300.0  # a safety net only: each wait ends on a file, a process or a thread the test makes happen
PF_EXITING = 0x4  # /proc/<pid>/stat's flags: the process is exiting (a SIGKILL taken)


def _stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, parent pid, session, flags) of process `pid`, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0].decode(), int(fields[1]), int(fields[3]), int(fields[6])


def _killed(pid: int) -> bool:
    """Process `pid` is gone, a zombie, exiting, or has a SIGKILL pending (it runs no more code)."""
    stat = _stat(pid)
    if stat is None or stat[0] in "ZX" or stat[3] & PF_EXITING:
        return True
    try:
        pending = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    masks = [int(line.split()[1], 16) for line in pending.splitlines() if line.startswith(("SigPnd:", "ShdPnd:"))]
    return any(mask & (1 << 8) for mask in masks)  # bit 9 - 1: SIGKILL


def _processes() -> dict[int, tuple[str, int, int, int]]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                found[int(entry)] = stat
    return found


def _children() -> set[int]:
    """This process's children, zombies included (a zombie is a process not yet reaped)."""
    return {pid for pid, (_, parent, _, _) in _processes().items() if parent == os.getpid()}


def _session(leader: int) -> set[int]:
    return {pid for pid, (_, _, session, _) in _processes().items() if session == leader}


def _wait(what: str, done, timeout: float = WAIT_S) -> None:
    end = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < end, f"{what} never happened"
        time.sleep(0.02)


@needs_rtx
@pytest.mark.slow  # a worker of its own, which imports torch_tensorrt: seconds of CPU
def test_closing_the_explorer_ends_its_worker_and_its_build_and_nothing_starts_again(tmp_path, monkeypatch):
    held_in_new_processes(monkeypatch, tmp_path / "site")
    mark = tmp_path / "converting"
    monkeypatch.setenv(MARK, str(mark))
    own = Worker()  # started by this test's first job: the process's shared one may have started before
    monkeypatch.setattr(Worker, "shared", lambda: own)
    before = _children()
    model, x = made(HeldBuild, 2, 8)
    ex = Explorer(model, x, min_block_size=1, debounce=0)
    try:
        ex.controls["build"].value = True
        ex.flush()
        # the worker is inside TensorRT's conversion (it imports torch_tensorrt first, at nice 19)
        wait_on_worker(mark.exists, "the held build never happened", lambda: own.pid, could_run_s=WAIT_S)
        worker = own.pid
        assert worker is not None and int(mark.read_text()) == worker
        ex.controls["min_block_size"].value = 2  # a second build, queued behind the held one
        ex.flush()
        assert _children() - before == {worker}
        session = _session(worker)
        assert worker in session

        started = time.monotonic()
        ex.close()
        took = time.monotonic() - started
        assert all(_killed(pid) for pid in session), {pid: _stat(pid) for pid in session}
        assert took < WAIT_S  # (reported, not judged: the machine's speed is not the test's)

        for thread in (ex.build_thread, ex.compile_today_thread, ex.measure_thread):
            thread.join(WAIT_S)
            assert not thread.is_alive()
        _wait("the worker reaped", lambda: _children() == before)
        assert own.starts == 1 and own.pid is None and ex.controller.long_work.pid is None
        assert not any(_stat(pid) for pid in session)  # the worker's session is gone too
        assert ex.controller.builds_of(ex.controller.shown) is None  # the queued build never ran
    finally:
        ex.close()
        own.close()


BROKEN = [sys.executable, "-c", "import sys; sys.exit(3)"]  # a worker that would say so if it were started


def test_a_closed_explorers_long_work_takes_no_job_and_starts_no_worker(two_blocks) -> None:
    """A job asked after close (a build queued behind one the close cancelled, a line, a
    search) is JobCancelled at once: no worker process starts, nothing runs here."""
    model, inputs, gm = two_blocks
    own = Worker(command=BROKEN)
    work = LongWork(gm, inputs, worker=own)
    work.close()
    part = hv.partition(gm, min_block_size=1)
    for job in (lambda: work.build(part), lambda: work.measure(part), lambda: work.numerics(part),
                lambda: work.blockers(part), lambda: work.tune(part.config, 2)):
        with pytest.raises(JobCancelled, match="^the Explorer was closed$"):
            job()
    assert own.starts == 0 and work.notes == {} and not work.running_here()


def test_a_build_running_in_this_process_stops_at_its_next_conversion_once_closed(two_blocks, monkeypatch) -> None:
    """A graph the worker cannot take builds here: closing stops it before its next engine,
    as the worker's build stops (test_build_steps_aside.py); Torch-TensorRT's conversion is
    stood in for at hierviz's boundary (trt.convert_and_build)."""
    from hierviz.building import build_partition, subgraph_builds
    from hierviz.building.subgraph_builds import SubgraphBuilder

    model, inputs, gm = two_blocks
    work = LongWork(gm, inputs, in_worker=False)
    converted: list[str] = []
    monkeypatch.setattr(subgraph_builds, "no_builder", lambda: None)
    monkeypatch.setattr(subgraph_builds.trt, "conversion_settings", lambda *a, **k: "settings")
    monkeypatch.setattr(subgraph_builds.trt, "convert_and_build", lambda gm, settings, **options: (
        converted.append(options["label"]), types.SimpleNamespace(warnings=(), engine=None, engine_file=None))[1])
    engines = [torch.fx.symbolic_trace(torch.nn.ReLU()), torch.fx.symbolic_trace(torch.nn.Tanh())]

    def build_one(part, graph, example_inputs):
        builder = SubgraphBuilder(cache=False)
        builder.build(engines[0], "first")
        work.close()  # the Explorer closes while the build runs
        builder.build(engines[1], "second")
        return "built"

    monkeypatch.setattr(build_partition, "build_one", build_one)
    with pytest.raises(JobCancelled, match="^the Explorer was closed$"):
        work.build(hv.partition(gm, min_block_size=1))
    assert converted == ["first"]
