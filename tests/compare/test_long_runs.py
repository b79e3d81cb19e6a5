"""Long runs lose nothing (issue 31): hv.sweep(out=...) writes each row as it finishes and a
rerun skips the rows already there; hv.tune(storage=...) keeps its trials in Optuna's database
and a rerun resumes without measuring them again; Ctrl-C in either returns what finished."""

from __future__ import annotations

import json
import re
import sys
import warnings

import pandas as pd
import pytest

import hierviz as hv
import importlib
from hierviz.compare import tune_trial

from tests.small_net import SCRIPTED_COMPILERS

sweep_mod = importlib.import_module("hierviz.compare.sweep")

GRID = {"min_block_size": [1, 2, 3, 4]}
READ = {".csv": pd.read_csv, ".parquet": pd.read_parquet}  # the table on disk, as a user reads it back


def _sweep(small, out, **kwargs):
    model, inputs, _ = small
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        df = hv.sweep(model, inputs, GRID, progress=False, out=out, **kwargs)
    return df, [str(w.message) for w in seen if "hv.sweep" in str(w.message)]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_sweep_writes_each_row_and_a_rerun_skips_them(small, tmp_path, monkeypatch, suffix) -> None:
    out, read = tmp_path / f"sweep{suffix}", READ[suffix]
    written: list[int] = []
    real_add = sweep_mod.SweepFile.add

    def add(self, row, key):
        real_add(self, row, key)
        written.append(len(read(out)))  # on disk as soon as the row finished

    monkeypatch.setattr(sweep_mod.SweepFile, "add", add)
    first, notes = _sweep(small, out)
    assert written == [1, 2, 3, 4] and notes == [] and first.attrs["skipped"] == 0
    ran: list[int] = []
    real_row = sweep_mod.partition_row
    monkeypatch.setattr(sweep_mod, "partition_row", lambda gm, cfg: (ran.append(cfg.min_block_size),
                                                                     real_row(gm, cfg))[1])
    again, notes = _sweep(small, out)
    assert ran == [] and again.attrs["skipped"] == 4
    assert notes == [f"hv.sweep: 4 of 4 row(s) already in {out} for this model and settings: skipped."]
    assert list(again["min_block_size"]) == [1, 2, 3, 4]
    assert list(again["subgraphs"]) == list(first["subgraphs"])
    # another setting is run; the rows already there are not
    model, inputs, _ = small
    more = hv.sweep(model, inputs, {"min_block_size": [2, 5]}, progress=False, out=out)
    assert ran == [5] and list(more["min_block_size"]) == [2, 5] and len(read(out)) == 5
    assert list(read(out)["min_block_size"]) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_sweep_ctrl_c_returns_the_rows_finished(small, tmp_path, monkeypatch, suffix) -> None:
    real_row = sweep_mod.partition_row

    def third_is_interrupted(gm, cfg):
        if cfg.min_block_size == 3:
            raise KeyboardInterrupt
        return real_row(gm, cfg)

    monkeypatch.setattr(sweep_mod, "partition_row", third_is_interrupted)
    out = tmp_path / f"s{suffix}"
    df, notes = _sweep(small, out, measure={"warmup": 0, "iters": 2})
    assert list(df["min_block_size"]) == [1, 2] and len(READ[suffix](out)) == 2
    assert notes == ["hv.sweep: interrupted (Ctrl-C): 2 of 4 row(s) finished; run again with the same out= to "
                     "finish the rest."]
    monkeypatch.setattr(sweep_mod, "partition_row", real_row)
    rest, notes = _sweep(small, out, measure={"warmup": 0, "iters": 2})
    assert list(rest["min_block_size"]) == [1, 2, 3, 4] and rest.attrs["skipped"] == 2
    assert list(rest["error"])[:2] == list(df["error"]) and df["error"].notna().all()  # read back from the file


def test_sweep_out_refuses_what_it_cannot_write(small, tmp_path) -> None:
    model, inputs, _ = small
    with pytest.raises(hv.ConfigError, match=r"out must end in \.csv or \.parquet, not 'x\.xlsx'\."):
        hv.sweep(model, inputs, GRID, progress=False, out=tmp_path / "x.xlsx")
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(hv.ConfigError, match="is not a table hv.sweep wrote"):
        hv.sweep(model, inputs, GRID, progress=False, out=tmp_path / "other.csv")


def test_sweep_parquet_without_pyarrow_is_refused_before_any_row_runs(small, tmp_path, monkeypatch) -> None:
    for name in ("pyarrow", "fastparquet"):  # a machine with neither Parquet engine: importing them fails
        monkeypatch.setitem(sys.modules, name, None)
    ran: list[int] = []
    monkeypatch.setattr(sweep_mod, "partition_row", lambda gm, cfg: ran.append(cfg.min_block_size))
    model, inputs, _ = small
    with pytest.raises(hv.ConfigError) as err:
        hv.sweep(model, inputs, GRID, progress=False, out=tmp_path / "x.parquet")
    assert str(err.value) == ("out='x.parquet' needs pyarrow to write Parquet: pip install 'hierviz[parquet]' "
                              "(or pip install pyarrow); or use out='sweep.csv'.")
    assert ran == [] and not (tmp_path / "x.parquet").exists()


def _tune(small, **kwargs):
    model, inputs, _ = small
    base = hv.Config(priority=("same",), support={"fast": hv.support.where(lambda n: n.op == "call_function",
                                                                          name="every op"),
                                                   "same": hv.support.where(lambda n: n.op == "call_function",
                                                                          name="every op")})
    return hv.tune(model, inputs, {"priority": [("same",), ("fast",)], "min_block_size": [1, 2]}, base=base,
                   progress=False, pruning=False,
                   measure={"warmup": 0, "iters": 3, "compilers": SCRIPTED_COMPILERS}, **kwargs)


def _counting(monkeypatch) -> list:
    measured: list = []
    real = tune_trial.measure_trial

    def count(part, *args, **kwargs):
        measured.append((part.config.priority, part.config.min_block_size))
        return real(part, *args, **kwargs)

    import hierviz.compare.tuning as tuning

    monkeypatch.setattr(tuning, "measure_trial", count)
    return measured


def test_tune_storage_resumes_without_measuring_finished_trials(small, tmp_path, monkeypatch) -> None:
    pytest.importorskip("optuna")
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    measured = _counting(monkeypatch)
    first = _tune(small, budget=2, storage=storage, study_name="small")
    assert len(first.trials) == 2 and 1 <= len(measured) <= 2  # none measured: the check below could not fail
    done = set(measured)
    settings = list(zip(first.trials["priority"], first.trials["min_block_size"]))
    measured.clear()
    second = _tune(small, budget=4, storage=storage, study_name="small")
    assert len(second.trials) == 4
    assert list(zip(second.trials["priority"], second.trials["min_block_size"]))[:2] == settings
    assert not set(measured) & done                           # the finished trials were not measured again
    assert list(second.trials["median_ms"])[:2] == list(first.trials["median_ms"])
    assert any(n.startswith("resumed 2 finished trial(s) from sqlite:///") for n in second.notes)
    import optuna

    assert len(optuna.load_study(study_name="small", storage=storage).trials) >= 4  # Optuna's own storage
    ax = second.plot()
    assert len(ax.collections) >= 1


# hv.tune over two support mappings, run as a script in a fresh process each time (its predicates
# the same code, as when a notebook or script is run again): the study in STORAGE resumed with
# BUDGET, then, when OTHER, the same call with a mapping of other content.
RESUME = """
import json, sys, warnings
import torch
import hierviz as hv
import hierviz.compare.tuning as tuning
from tests.small_net import SCRIPTED_COMPILERS, SmallNet

warnings.simplefilter("ignore")
measured = []
real = tuning.measure_trial
tuning.measure_trial = lambda part, *a, **k: (measured.append([part.config.priority[0], part.config.min_block_size]),
                                              real(part, *a, **k))[1]
torch.manual_seed(0)
model, inputs = SmallNet().eval(), (torch.randn(1, 3, 16, 16),)
every = hv.support.where(lambda n: n.op == "call_function", name="every op")


def tune(budget, few_ops):
    few = {"fast": hv.support.ops(few_ops), "same": every}
    many = {"fast": every, "same": every}
    space = {"priority": [("same",), ("fast",)], "support": [few, many], "min_block_size": [1, 2]}
    return hv.tune(model, inputs, space,
                   base=hv.Config(priority=("same",), support=many), budget=budget, progress=False, pruning=False,
                   measure={"warmup": 0, "iters": 3, "compilers": SCRIPTED_COMPILERS}, storage=STORAGE,
                   study_name="support")


res = tune(BUDGET, ["aten.relu.default", "aten.convolution.default"])
out = {"rows": res.trials[["priority", "support", "min_block_size", "status", "median_ms"]].values.tolist(),
       "notes": res.notes, "measured": measured}
if OTHER:
    try:
        tune(BUDGET, ["aten.relu.default", "aten.convolution.default", "aten.tanh.default"])
    except hv.ConfigError as exc:
        out["refused"] = str(exc)
print(json.dumps(out))
"""


def _resume_in_a_fresh_process(run_python, storage: str, budget: int, other: bool) -> dict:
    code = f"STORAGE, BUDGET, OTHER = {storage!r}, {budget}, {other}\n" + RESUME
    done = run_python(code, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow  # a fresh process or a worker of its own: seconds of CPU (make check leaves it out)
def test_tune_storage_resumes_a_support_mapping_in_a_fresh_process(tmp_path, run_python) -> None:
    """The choices Optuna keeps for a support mapping are derived from its content, so a study
    resumed in another process continues (the mapping's id, its key before, differed and made
    Optuna refuse the choices); a mapping of other content is refused with a ConfigError."""
    pytest.importorskip("optuna")
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    first = _resume_in_a_fresh_process(run_python, storage, 2, False)
    assert len(first["rows"]) == 2 and 1 <= len(first["measured"]) <= 2
    second = _resume_in_a_fresh_process(run_python, storage, 4, True)
    assert len(second["rows"]) == 4 and second["rows"][:2] == first["rows"]   # continued, not started over
    assert f"resumed 2 finished trial(s) from {storage} (study 'support'); not measured again" in second["notes"]
    assert not [m for m in second["measured"] if m in first["measured"]]    # the finished trials not measured again
    assert re.fullmatch(
        r"hv\.tune: study 'support' in sqlite:///\S+ was run with other settings \(space support was "
        r"\['fast=ops\(2\); same=where\(every op\) #[0-9a-f]{10}'\], now \['fast=ops\(3\); same=where\(every op\) "
        r"#[0-9a-f]{10}'\]\): resume it with the same base and space, "
        r"or pass another study_name to start a new study\.",
        second["refused"]), second["refused"]


def test_tune_ctrl_c_returns_the_trials_finished(small, monkeypatch) -> None:
    pytest.importorskip("optuna")
    measured = _counting(monkeypatch)
    import hierviz.compare.tuning as tuning

    counting = tuning.measure_trial

    def second_is_interrupted(part, *args, **kwargs):
        if len(measured) == 1:
            raise KeyboardInterrupt
        return counting(part, *args, **kwargs)

    monkeypatch.setattr(tuning, "measure_trial", second_is_interrupted)
    res = _tune(small, budget=4)
    n = len(res.trials)
    assert 1 <= n < 4 and res.stopped == "Ctrl-C" and len(measured) == 1
    assert set(res.trials["status"]) <= {"measured", "duplicate"}   # the trial being measured is left out
    assert any(note.startswith(f"interrupted (Ctrl-C): the result covers the {n} trial(s) finished so far")
               for note in res.notes)
    assert res.best is not None and res.verdict


def test_tune_storage_is_checked_first(small) -> None:
    with pytest.raises(hv.ConfigError, match="storage must be a database URL"):
        _tune(small, budget=2, storage="tune.db")
    with pytest.raises(hv.ConfigError, match="study_name names a study in storage"):
        _tune(small, budget=2, study_name="x")
