"""hv.sweep with an executor (issue 37): a ProcessPoolExecutor partitions the rows in other
processes (the graph sent as plain data) and gives the rows a local sweep gives, in a spawned
process too for a model with custom ops (their modules imported there); Ctrl-C, a real
SIGINT arriving while the sweep waits for a row of a thread or a process executor, returns the
rows finished so far with a note, as the docstring promises, instead of no rows."""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import threading
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

import hierviz as hv
from hierviz import trt
from tests.custom_op_models import PadConv, SinNet, example, seeded

sweep_mod = importlib.import_module("hierviz.compare.sweep")
rows_mod = importlib.import_module("hierviz.compare.rows")

GRID = {"min_block_size": [1, 2, 3, 4, 5]}


def _sweep(small, **kwargs):
    model, inputs, _ = small
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        df = hv.sweep(model, inputs, GRID, progress=False, **kwargs)
    return df, [str(w.message) for w in seen if "hv.sweep" in str(w.message)]


def _ctrl_c_during_the_second_row(real, ctrl_c, waiting, released):
    """partition_row whose second row, once the sweep has the first row (`waiting`: it waits for
    the second row's next), calls `ctrl_c()` (SIGINT to the sweep: a user pressing Ctrl-C while it waits for
    that row) and does not end before `released` (set once the sweep returned)."""
    def row(gm, cfg):
        if cfg.min_block_size == 2:
            assert waiting.wait(60), "the sweep never waited for the second row"
            ctrl_c()
            released.wait(60)
        return real(gm, cfg)
    return row


def _ctrl_c_to_the_main_thread() -> None:
    """SIGINT to this process's main thread, the one waiting for the row, as a terminal's Ctrl-C
    mostly reaches it."""
    main = threading.main_thread().ident
    assert main is not None
    signal.pthread_kill(main, signal.SIGINT)


def _ctrl_c_to_the_pool_thread() -> None:
    """SIGINT to the pool's thread that runs the row: a Ctrl-C sent to the process, which the
    kernel may hand to any thread not blocking it. It wakes no wait of the main thread, as a
    SIGINT reaching the main thread just before its wait begins does not (the flake of
    test_thread_executor_ctrl_c_keeps_the_finished_rows under load): Python runs the handler
    only when the main thread next runs."""
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)


def _telling_when_the_first_row_is_taken(pool, waiting):
    """`pool`, whose first future sets `waiting` once the sweep has its result (the sweep takes
    the rows in grid order: it waits for the second row's next)."""
    submit, made = pool.submit, []

    def submit_and_tell(*args, **kwargs):
        fut = submit(*args, **kwargs)
        made.append(fut)
        if len(made) == 1:
            result = fut.result

            def told(*a, **k):
                try:
                    return result(*a, **k)
                finally:
                    waiting.set()
            fut.result = told
        return fut
    pool.submit = submit_and_tell
    return pool


@pytest.fixture
def ctrl_c_raises():
    """Python's own SIGINT handler (KeyboardInterrupt), as in a terminal or a notebook, even where
    the suite was started with SIGINT ignored (a background job of a non-interactive shell)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _fork():
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs the fork start method (the patched row reaches the worker by forking)")
    return multiprocessing.get_context("fork")


def test_process_executor_gives_the_rows_of_a_local_sweep(small):
    local, _ = _sweep(small)
    with ProcessPoolExecutor(max_workers=1, mp_context=_fork()) as pool:
        remote, notes = _sweep(small, executor=pool)
    assert notes == [] and remote["error"].isna().all()
    assert remote.equals(local)


@pytest.mark.slow  # a spawned process imports torch and hierviz: seconds of CPU
def test_a_spawned_process_sweeps_models_with_custom_ops():
    """A fresh interpreter (spawn: not a fork of this process, which has the ops already) reads
    a user's op (tests.custom_op_models) and Torch-TensorRT's tensorrt::conv_asym_pad."""
    models = [SinNet, PadConv] if trt.available() else [SinNet]
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        for cls in models:
            model, inputs = seeded(cls), example(cls)
            local = hv.sweep(model, inputs, {"min_block_size": [1, 2]}, progress=False)
            remote = hv.sweep(model, inputs, {"min_block_size": [1, 2]}, progress=False, executor=pool)
            assert remote["error"].isna().all(), list(remote["error"])
            assert remote.equals(local)


@pytest.mark.parametrize("ctrl_c", [_ctrl_c_to_the_main_thread, _ctrl_c_to_the_pool_thread])
def test_thread_executor_ctrl_c_keeps_the_finished_rows(small, monkeypatch, ctrl_c_raises, ctrl_c):
    waiting, released = threading.Event(), threading.Event()
    monkeypatch.setattr(sweep_mod, "partition_row",
                        _ctrl_c_during_the_second_row(sweep_mod.partition_row, ctrl_c, waiting, released))
    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            df, notes = _sweep(small, executor=_telling_when_the_first_row_is_taken(pool, waiting))
        finally:
            released.set()
    assert list(df["min_block_size"]) == [1] and df["error"].isna().all()
    assert notes == ["hv.sweep: interrupted (Ctrl-C): 1 of 5 row(s) finished."]


@pytest.mark.slow  # a fresh process or a worker of its own: seconds of CPU (make check leaves it out)
def test_process_executor_ctrl_c_keeps_the_finished_rows(small, monkeypatch, ctrl_c_raises):
    context = _fork()
    waiting, released = context.Event(), context.Event()  # shared with the worker process it forks
    monkeypatch.setattr(rows_mod, "partition_row",
                        _ctrl_c_during_the_second_row(rows_mod.partition_row,
                                                      lambda: os.kill(os.getppid(), signal.SIGINT), waiting, released))
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        try:
            df, notes = _sweep(small, executor=_telling_when_the_first_row_is_taken(pool, waiting))
        finally:
            released.set()
    assert list(df["min_block_size"]) == [1] and df["error"].isna().all()
    assert notes == ["hv.sweep: interrupted (Ctrl-C): 1 of 5 row(s) finished."]
