"""Runs that meet lose nothing: two processes sweeping into one out= file at once both finish and
the file holds every row of both; two tunes on one Optuna study both land. A temp file a dead
writer left is removed by the next write; a damaged table is one ConfigError naming it. The
processes meet at a barrier before every row they write (no sleeps), and every wait has a timeout,
so a test stops by itself."""

from __future__ import annotations

import json
import multiprocessing
import time
import warnings

import pandas as pd
import pytest

import hierviz as hv

READ = {".csv": pd.read_csv, ".parquet": pd.read_parquet}
WAIT_S = 120  # the longest any process waits for the other at the barrier


def _small():
    import torch

    from tests.small_net import SmallNet

    torch.manual_seed(0)
    return SmallNet().eval(), (torch.randn(1, 3, 16, 16),)


def _sweep_in_step(out: str, sizes: list[int], barrier, results) -> None:
    """A child process: hv.sweep into `out`, meeting the other child at `barrier` before each row."""
    import importlib

    sweep_mod = importlib.import_module("hierviz.compare.sweep")
    real_add = sweep_mod.SweepFile.add

    def add(self, row, key):
        barrier.wait(timeout=WAIT_S)
        real_add(self, row, key)

    sweep_mod.SweepFile.add = add
    model, inputs = _small()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = hv.sweep(model, inputs, {"min_block_size": sizes}, progress=False, out=out)
    results.put((sizes[0], list(df["min_block_size"])))


def _run_together(target, args_each: list[tuple]) -> list:
    """Run `target(*args, barrier, results)` in one spawned process per args, all at once; the
    exit codes must be 0; returns what each put in `results`. A process that fails breaks the
    barrier, so the others stop at once instead of waiting for it."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(len(args_each), timeout=WAIT_S), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, barrier, results)) for args in args_each]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 4 * WAIT_S
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        procs[0].join(timeout=0.5) if procs[0].is_alive() else procs[-1].join(timeout=0.5)
        if any(p.exitcode not in (None, 0) for p in procs):
            barrier.abort()
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    assert [p.exitcode for p in procs] == [0] * len(procs)
    return [results.get(timeout=10) for _ in procs]


@pytest.mark.slow  # two fresh processes import torch and hierviz
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_two_sweeps_into_one_file_both_finish_with_every_row(tmp_path, suffix) -> None:
    out = tmp_path / f"s{suffix}"
    got = dict(_run_together(_sweep_in_step, [(str(out), [1, 2, 3, 4]), (str(out), [3, 4, 5, 6])]))
    assert got == {1: [1, 2, 3, 4], 3: [3, 4, 5, 6]}
    table = READ[suffix](out)
    assert sorted(table["min_block_size"]) == [1, 2, 3, 4, 5, 6]  # every row of both, each setting once
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".s{suffix}.lock", f"s{suffix}"]  # no temp file left


def test_a_temp_file_a_dead_writer_left_is_removed_by_the_next_write(small, tmp_path) -> None:
    model, inputs, _ = small
    out = tmp_path / "s.csv"
    left = tmp_path / ".s.csv.k1ll3d.tmp"
    left.write_text("model_key,settings_key\nhalf a ro")
    hv.sweep(model, inputs, {"min_block_size": [1]}, progress=False, out=out)
    assert not left.exists() and len(pd.read_csv(out)) == 1


def test_a_damaged_table_is_one_error_naming_it(small, tmp_path) -> None:
    model, inputs, _ = small
    out = tmp_path / "s.csv"
    out.write_bytes(b"\x00\x01\xff garbage")
    with pytest.raises(hv.ConfigError, match=f"out={str(out)!r} exists but cannot be read as a table"):
        hv.sweep(model, inputs, {"min_block_size": [1]}, progress=False, out=out)
    out.unlink()
    hv.sweep(model, inputs, {"min_block_size": [1, 2]}, progress=False, out=out)
    table = pd.read_csv(out)
    table["subgraphs"] = table["subgraphs"].astype(object)
    table.loc[1, "subgraphs"] = "three"
    table.to_csv(out, index=False)
    with pytest.raises(hv.ConfigError) as info:
        hv.sweep(model, inputs, {"min_block_size": [1, 2]}, progress=False, out=out)
    assert str(info.value) == (
        f"out={str(out)!r} holds a row of this model (settings_key {table.loc[1, 'settings_key']}) whose subgraphs "
        "is 'three', not a whole number: the table was changed after hv.sweep wrote it. Delete that row (it is "
        "measured again) or give another file name.")


def _tune_in_step(storage: str, budget: int, barrier, results) -> None:
    """A child process: hv.tune on the study in `storage`, started with the other at `barrier`."""
    from tests.small_net import SCRIPTED_COMPILERS

    model, inputs = _small()
    every = hv.support.where(lambda n: n.op == "call_function", name="every op")
    barrier.wait(timeout=WAIT_S)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = hv.tune(model, inputs, {"priority": [("same",), ("fast",)], "min_block_size": [1, 2, 3]},
                      base=hv.Config(priority=("same",), support={"fast": every, "same": every}), budget=budget,
                      progress=False, pruning=False, measure={"warmup": 0, "iters": 3, "compilers": SCRIPTED_COMPILERS},
                      storage=storage, study_name="shared")
    results.put([(str(p), int(m), s) for p, m, s in res.trials[["priority", "min_block_size", "status"]].values])


@pytest.mark.slow  # two fresh processes import torch and hierviz
def test_two_tunes_on_one_study_both_land(tmp_path) -> None:
    optuna = pytest.importorskip("optuna")
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    got = _run_together(_tune_in_step, [(storage, 3), (storage, 3)])
    assert [len(rows) for rows in got] == [3, 3]
    measured = {(p, m) for rows in got for p, m, status in rows if status == "measured"}
    assert measured  # (both processes may measure the same settings: the study is shared)
    study = optuna.load_study(study_name="shared", storage=storage)
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    rows = [json.loads(t.user_attrs["hierviz_row"]) for t in complete if "hierviz_row" in t.user_attrs]
    kept = {(str(row["priority"]), int(row["min_block_size"])) for row in rows}
    assert measured <= kept  # every trial either process measured is in the study, its row with it
