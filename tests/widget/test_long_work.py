"""The Explorer's long work runs in its worker process (hierviz/widget/long_work.py): the
compile-today line, "measure latency" and "find fastest" give what this process would; a job
whose settings do not pickle runs here with a note; killing the worker mid-trial shows an
error and the next "find fastest" works; closing the Explorer, or exiting the interpreter with
a search running, ends the worker at once and the process exits cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import hierviz as hv
from hierviz import trt
from hierviz.widget import Explorer
from hierviz.widget.worker import Worker

from . import worker_helpers as helpers  # the worker imports it by this name too (it gets this sys.path)
from .worker_waits import join_on_worker, wait_on_worker

ROOT = Path(__file__).parents[2]
# The search below holds its compile for helpers.HOLD_S (600 s): an exit that waited for it would
# not end within EXIT_S, a safety net far above any machine's exit. (How long the exit takes,
# beside the same script without a search, is measured by benchmarks/explore_exit.py: the
# figure is the CPU's, not a test's.)
EXIT_S = 300.0
assert EXIT_S < helpers.HOLD_S


@pytest.fixture(scope="module")
def two_blocks():
    model, inputs = helpers.model_and_inputs()
    return model, inputs, hv.capture(model, inputs)


def test_line_measure_and_find_fastest_come_from_the_worker(two_blocks) -> None:
    model, inputs, gm = two_blocks
    ex = Explorer(model, inputs, helpers.SAME, debounce=0, measure_options=helpers.QUICK)
    join_on_worker(ex.compile_today_thread, "the compile-today line never came")
    work = ex.controller.long_work
    work._worker = Worker()  # its own (other tests' Explorers hold the shared one): its close ends it
    if trt.available():
        fast = hv.partition(gm, engine="fast", min_block_size=1).stats["subgraphs_by_backend"]["tensorrt"]
        assert (f"torch_tensorrt.compile today (fast):</span> <b>{fast}</b> "
                "TensorRT engine(s)") in ex.panels["stats"].value
    ex.controls["measure"].value = True
    m = ex.measurement
    assert m is not None and m.outputs_match and m.iters == 3 and not ex.errors
    here = hv.measure(ex.partition, inputs, **helpers.QUICK)
    assert list(m.per_subgraph["tag"]) == list(here.per_subgraph["tag"])
    ex.find_fastest(budget=2, space={"min_block_size": [1, 2]}, measure=helpers.QUICK, wait=True)
    assert ex.fastest is not None and ex.fastest.graph is ex.graph and len(ex.fastest.trials) == 2
    assert "fastest:" in ex.panels["fastest"].value and "in this process" not in ex.panels["fastest"].value
    assert work.notes == {} and work.pid is not None and work.pid != os.getpid() and not ex.internal_errors
    pid = work.pid
    ex.close()  # its last user: ends the worker at once (killed; a thread reaps it)
    assert work.pid is None
    assert work._worker.wait_ended(60)  # a safety net: the reaper ends with the killed process
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_predicate_that_does_not_pickle_runs_here_with_a_note(two_blocks) -> None:
    model, inputs, _ = two_blocks
    own = hv.Config(priority=("same",), support={"same": hv.support.where(lambda n: n.op == "call_function")},
                    min_block_size=1)
    ex = Explorer(model, inputs, own, debounce=0)
    ex.find_fastest(budget=2, space={"min_block_size": [1, 2]}, measure=helpers.QUICK, wait=True)
    assert ex.fastest is not None and "fastest:" in ex.panels["fastest"].value
    note = ex.controller.long_work.notes["tune"]
    assert note.startswith("ran in this process, not the worker: its settings do not pickle")
    assert "ran in this process, not the worker" in ex.panels["fastest"].value


@pytest.mark.slow  # a fresh process or a worker of its own: seconds of CPU (make check leaves it out)
def test_killing_the_worker_mid_trial_shows_an_error_and_the_next_search_works(two_blocks, tmp_path,
                                                                               monkeypatch) -> None:
    model, inputs, _ = two_blocks
    mark = tmp_path / "compiling"
    monkeypatch.setenv(helpers.MARK, str(mark))  # the worker started below inherits it
    own = Worker()
    ex = Explorer(model, inputs, helpers.SAME, debounce=0)
    ex.controller.long_work._worker = own  # a worker of this test's own, not the process's shared one
    try:
        thread = ex.find_fastest(budget=2, space={"min_block_size": [1, 2]}, measure=helpers.WAITING)
        wait_on_worker(mark.exists, f"{mark.name} never appeared", lambda: own.pid)  # a trial compiles in the worker
        killed = ex.controller.long_work.pid
        os.kill(killed, signal.SIGKILL)
        thread.join(60)
        assert not thread.is_alive() and ex.fastest is None
        shown = ex.panels["fastest"].value
        assert "the search failed: the worker process was killed by SIGKILL" in shown, shown
        assert ex.errors["worker"].startswith("the worker process was killed by SIGKILL")
        ex.find_fastest(budget=2, space={"min_block_size": [1, 2]}, measure=helpers.QUICK, wait=True)
        assert ex.fastest is not None and "fastest:" in ex.panels["fastest"].value
        assert own.starts == 2 and ex.controller.long_work.pid != killed and not ex.internal_errors
        assert "worker" not in ex.errors  # the next search worked: the message is gone
    finally:
        own.close()


@pytest.mark.slow  # a fresh process or a worker of its own: seconds of CPU (make check leaves it out)
def test_closing_one_explorer_leaves_the_others_search_going(two_blocks, tmp_path, monkeypatch) -> None:
    """Two Explorers on one worker process: the second's search is compiling there when the
    first is closed; the search goes on in the same process (nothing fails "closed") and is
    cancelled only when its own Explorer closes, which then ends the worker."""
    model, inputs, _ = two_blocks
    mark = tmp_path / "compiling"
    monkeypatch.setenv(helpers.MARK, str(mark))
    own = Worker()
    first = Explorer(model, inputs, helpers.SAME, debounce=0)
    second = Explorer(model, inputs, helpers.SAME, debounce=0, min_block_size=2)
    for ex in (first, second):
        ex.controller.long_work._worker = own
    try:
        assert first.blockers is not None and first.controller.long_work._hold is not None  # the first holds it too
        thread = second.find_fastest(budget=2, space={"min_block_size": [1, 2]}, measure=helpers.WAITING)
        wait_on_worker(mark.exists, f"{mark.name} never appeared", lambda: own.pid)  # a trial compiles in the worker
        pid = own.pid
        first.close()
        thread.join(3.0)
        assert thread.is_alive() and own.pid == pid  # still searching, in the same process
        assert "failed" not in second.panels["fastest"].value and "worker" not in second.errors
        second.close()
        thread.join(30)
        assert not thread.is_alive() and "the worker process was closed" in second.panels["fastest"].value
        assert own.pid is None
    finally:
        own.close()


EXIT_SCRIPT = """
import os, sys
sys.path.insert(0, {helpers_dir!r})
import worker_helpers as helpers
import hierviz as hv
from tests.widget.worker_waits import wait_on_worker

model, inputs = helpers.model_and_inputs()
ex = hv.explore(model, inputs, helpers.SAME, debounce=0)
ex.find_fastest(budget=4, space={{"min_block_size": [1, 2, 3, 4]}}, measure=helpers.WAITING)
try:  # (its worker at nice 19 may be starved: waited for as long as it could not run)
    wait_on_worker(lambda: os.path.exists(os.environ[helpers.MARK]), "no compile started",
                   lambda: ex.controller.long_work.pid, could_run_s=150.0)
except AssertionError as exc:  # the search never reached its compiler: say what the explorer shows
    print(exc, ex.errors, ex.internal_errors, ex.panels["fastest"].value[:300], flush=True)
    sys.exit(3)
print("searching", flush=True)
"""


def _exit_while_searching(tmp_path: Path, run: int) -> float:
    # one run here; benchmarks/explore_exit.py runs it 20 times and prints the seconds
    """Seconds from "find fastest is compiling in the worker" to the script's exit (code 0)."""
    mark = tmp_path / f"compiling-{run}"
    env = {**os.environ, helpers.MARK: str(mark),
           "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    code = textwrap.dedent(EXIT_SCRIPT.format(helpers_dir=str(Path(__file__).parent)))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    # the script gives up once its worker could have run 150 s without a compile; the timer is the last
    # guard against a hang
    guard = threading.Timer(150 + EXIT_S + 60, proc.kill)
    guard.start()
    try:
        line = proc.stdout.readline()
        start = time.monotonic()
        proc.wait(timeout=EXIT_S)  # TimeoutExpired: the exit waits for the held compile
        took = time.monotonic() - start
    finally:
        guard.cancel()
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read()
    assert line.strip() == "searching", (line, err[-2000:])
    assert proc.returncode == 0 and "terminate called" not in err, err[-2000:]
    worker = int(mark.read_text())
    with pytest.raises(ProcessLookupError):  # the worker ended with the interpreter
        os.kill(worker, 0)
    return took


@pytest.mark.slow  # a fresh process or a worker of its own: seconds of CPU (make check leaves it out)
def test_exiting_with_find_fastest_running_is_quick_and_clean(tmp_path) -> None:
    _exit_while_searching(tmp_path, 0)  # exited (code 0, the worker gone) with the compile still held

