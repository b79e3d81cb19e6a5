"""hv.tune: a real Optuna search over real measurements (TorchInductor on the CPU, and small
compilers of our own that are fast, or fast and wrong), duplicates measured once, a setting
whose outputs differ never best, TensorRT never proposed without a GPU, arguments checked,
the model left untouched, the CLI."""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest
import torch
from torch.utils._pytree import tree_map

import hierviz as hv
from hierviz.compare.tune_result import pick_best
from hierviz.compare.tuning import TuneResult, default_space
from hierviz.latency.speedup_claim import clear_gain

from tests.small_net import SCRIPTED_COMPILERS, SmallNet

RELU = "torch.ops.aten.relu.default"
TANH = "torch.ops.aten.tanh.default"
FAST = {"warmup": 0, "iters": 3}


def exact(gm, example_inputs):
    """A backend that runs the subgraph as it is: right, and quick to compile."""
    return gm


def wrong(gm, example_inputs):
    """A backend that answers instantly with the right shapes and wrong values."""
    with torch.no_grad():
        answer = tree_map(lambda t: t + 1 if isinstance(t, torch.Tensor) and t.is_floating_point() else t,
                          gm(*example_inputs))
    return lambda *args: answer


EVERY_CALL = hv.support.where(lambda node: node.op == "call_function", name="every op")
OWN = {"exact": EVERY_CALL, "wrong": EVERY_CALL, "inductor": hv.support.inductor()}
OWN_COMPILERS = {"exact": exact, "wrong": wrong}


def own_tune(model, inputs, space, **kwargs) -> TuneResult:
    kwargs.setdefault("base", hv.Config(priority=("exact", "wrong"), support=OWN))
    kwargs.setdefault("measure", {**FAST, "compilers": OWN_COMPILERS})
    kwargs.setdefault("progress", False)
    return hv.tune(model, inputs, space, **kwargs)


@pytest.mark.slow
def test_inductor_search_measures_each_partition_once(small) -> None:
    model, inputs, _ = small
    before = copy.deepcopy(model.state_dict())
    space = {"min_block_size": [1, 5], "torch_executed_ops": [[], [RELU]]}
    res = hv.tune(model, inputs, space, base={"priority": ["inductor"]}, budget=10, measure=FAST,
                  pruning=False, progress=False)
    t = res.trials
    # four distinct settings, then the space is exhausted (no setting tried twice)
    assert len(t) == 4 and res.stopped == "space exhausted"
    assert t[["min_block_size", "torch_executed_ops"]].drop_duplicates().shape[0] == 4
    # trial 0 is the default setting, min_block_size 5 with nothing forced
    assert (t.loc[0, "min_block_size"], t.loc[0, "torch_executed_ops"]) == (5, "")
    # mbs 1 and 5 give the same single inductor subgraph when nothing is forced: measured once
    dup = t[t["status"] == "duplicate"]
    assert len(dup) == 1
    source = t[t["trial"] == dup["duplicate_of"].iloc[0]].iloc[0]
    assert source["status"] == "measured" and source["subgraphs"] == dup["subgraphs"].iloc[0] == 1
    assert dup["median_ms"].iloc[0] == source["median_ms"]
    assert dup["seconds"].iloc[0] == 0
    # with relu forced, mbs changes the partition: both measured, with TorchInductor
    forced = t[t["torch_executed_ops"] == RELU]
    assert set(forced["status"]) == {"measured"} and forced["subgraphs"].nunique() == 2
    assert (t["fallbacks"] == 0).all() and t["outputs_match"].all()
    # the trial measured again is best when that measurement claims a speed-up, else the default
    measured = t[t["status"] == "measured"]
    assert res.fastest_trial == int(measured.sort_values("median_ms").iloc[0]["trial"])
    crowned = pick_best(t)[0]
    if res.best_trial != 0:  # the crowned trial, confirmed by its full measurement
        assert res.best_trial == crowned and res.beat_eager
    else:  # nothing crowned, the default crowned, or the crowned trial not confirmed (said in the notes)
        assert crowned in (None, 0) or any(f"trial {crowned} looked faster" in n for n in res.notes)
    assert res.beat_eager == clear_gain(res.best_measurement.speedup_ci)  # one source: the final measurement
    assert res.best.priority == ("inductor",)
    best_row = t[t["trial"] == res.best_trial].iloc[0]
    assert res.best.min_block_size == best_row["min_block_size"]
    m = res.best_measurement
    assert m.outputs_match and m.per_subgraph["backend"].isin(["inductor", "torch"]).all()
    assert len(m.per_subgraph) == best_row["subgraphs"]
    # speed-up against the nn.Module run eagerly; the captured graph's own time kept apart
    assert res.baselines["eager_ms"] > 0 and res.baselines["graph_eager_ms"] > 0
    assert m.baseline_ms > 0 and m.graph_eager_ms == res.baselines["graph_eager_ms"]
    assert m.speedup == pytest.approx(m.baseline_ms / m.median_ms)
    assert best_row["speedup"] == pytest.approx(res.baselines["eager_start_ms"] / best_row["median_ms"])
    assert res.baselines["eager_ms"] == m.baseline_ms  # shown: the eager time measured beside the best
    # the partition handed back is the best setting's
    assert res.partition().config == res.best
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_wrong_outputs_are_never_best_even_when_fastest(small) -> None:
    model, inputs, _ = small
    res = own_tune(model, inputs, {"priority": [("exact",), ("wrong",)]}, pruning=False)
    t = res.trials.set_index("priority")
    assert t.loc["wrong", "status"] == "mismatch" and not t.loc["wrong", "outputs_match"]
    assert t.loc["wrong", "max_abs_error"] >= 0.99            # every value is off by one
    # priority exact alone partitions like the default exact>wrong: measured once, as trial 0
    assert t.loc["exact", "status"] == "duplicate" and t.loc["exact", "duplicate_of"] == 0
    assert t.loc["exact>wrong", "status"] == "measured"
    assert t.loc["wrong", "median_ms"] < t.loc["exact>wrong", "median_ms"]   # fastest, yet not best
    assert res.best.priority == ("exact", "wrong") and res.best_trial == 0
    assert "mismatch" in repr(res)


def test_every_setting_wrong_means_no_best(small) -> None:
    model, inputs, _ = small
    res = own_tune(model, inputs, {"min_block_size": [1, 2]},
                   base=hv.Config(priority=("wrong",), support={"wrong": EVERY_CALL}))
    assert set(res.trials["status"]) <= {"mismatch", "duplicate"}
    assert res.best is None and res.best_measurement is None
    assert "best     none" in repr(res)
    with pytest.raises(hv.ConfigError, match="no trial qualified"):
        res.partition()


def test_default_space_comes_from_the_graph_and_skips_tensorrt_on_cpu(small) -> None:
    model, inputs, gm = small
    space = default_space(model, inputs, base={"priority": ["inductor"]}, device="cpu")
    assert space["priority"] == [("inductor",)]          # TensorRT cannot be timed without a GPU: not added
    base = hv.Config(priority=("inductor",), support={"inductor": hv.support.inductor()})
    # torch_executed_ops: none first, then single ops whose forcing changes the partition
    ops = space["torch_executed_ops"]
    assert ops[0] == frozenset() and all(len(o) == 1 for o in ops[1:]) and len(ops) >= 2

    def subgraphs(size, forced):
        part = hv.partition(gm, config=base.replace(min_block_size=size, torch_executed_ops=forced))
        return tuple((s.backend, s.nodes) for s in part.subgraphs)

    # the default size 5, and sizes that partition differently from it with some forced op
    sizes = space["min_block_size"]
    assert 5 in sizes and len(sizes) >= 2
    for size in sizes:
        assert size == 5 or any(subgraphs(size, f) != subgraphs(5, f) for f in ops), size
    plain = hv.partition(gm, config=base.replace(min_block_size=5))
    for forced in ops[1:]:
        other = hv.partition(gm, config=base.replace(min_block_size=5, torch_executed_ops=forced))
        assert len(hv.diff(plain, other)) > 0, forced
    # hv.tune without a space from a setting with TensorRT keeps it in every trial (it is not
    # timed here: tests/compare/test_tune_keeps_tensorrt.py), and says why
    res = own_tune(model, inputs, None, base=hv.Config(support={"inductor": hv.support.inductor()}), budget=2)
    assert all("tensorrt" in p for p in res.trials["priority"])
    assert any(n.startswith("tensorrt kept in every setting searched") and "no CUDA GPU here" in n
               for n in res.notes)
    # what torch_tensorrt.compile would run cannot be timed here either: the result says so
    assert res.baselines["compile_ms"] is None
    assert any(n.startswith("compile_ms (what torch_tensorrt.compile runs) left out") and "GPU" in n
               for n in res.notes)


def test_tensorrt_asked_for_on_cpu_is_a_failed_trial_not_a_crash(small) -> None:
    model, inputs, _ = small
    res = own_tune(model, inputs, {"priority": [("exact",), ("tensorrt",)]})
    failed = res.trials[res.trials["priority"] == "tensorrt"].iloc[0]
    assert failed["status"] == "failed" and "GPU" in failed["error"]
    assert res.best.priority[0] == "exact"


def test_budget_timeout_and_seed(small) -> None:
    model, inputs, _ = small
    space = {"min_block_size": [1, 2, 3, 4, 5, 6], "priority": [("exact",), ("exact", "inductor")]}
    a = own_tune(model, inputs, space, budget=4, seed=3)
    b = own_tune(model, inputs, space, budget=4, seed=3)
    assert len(a.trials) == 4 and a.stopped == "budget"
    cols = ["priority", "min_block_size"]
    assert a.trials[cols].equals(b.trials[cols])           # the same seed proposes the same trials
    late = own_tune(model, inputs, space, budget=12, timeout=0.001)
    assert len(late.trials) == 1 and late.stopped == "timeout"


@pytest.mark.parametrize("kwargs, message", [
    ({"budget": 0}, "budget must be a positive"),
    ({"budget": "many"}, "budget must be a positive"),
    ({"timeout": -1}, "timeout must be a positive"),
    ({"executor": ThreadPoolExecutor(1)}, "one trial at a time"),
    ({"measure": {"check": False}}, "set by hv.tune itself"),
    ({"measure": 5}, "measure must be a dict"),
])
def test_bad_arguments_say_what_to_do(small, kwargs, message) -> None:
    model, inputs, _ = small
    with pytest.raises(hv.ConfigError, match=message):
        hv.tune(model, inputs, {"min_block_size": [1]}, progress=False, **kwargs)


def test_bad_space_names_the_field(small) -> None:
    model, inputs, _ = small
    with pytest.raises(hv.ConfigError, match="min_blok_size"):
        own_tune(model, inputs, {"min_blok_size": [1, 2]})
    # an invalid value stops the search before it starts (issue 23), naming the value
    with pytest.raises(hv.ConfigError, match=r"^space min_block_size=0: min_block_size must be >= 1"):
        own_tune(model, inputs, {"min_block_size": [0, 2]})


def test_train_mode_model_is_left_as_it_was() -> None:
    torch.manual_seed(0)
    model = SmallNet().train()
    inputs = (torch.randn(2, 3, 16, 16),)
    before = copy.deepcopy(model.state_dict())
    own_tune(model, inputs, {"min_block_size": [1, 2]}, budget=2)
    assert model.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k       # BatchNorm statistics and counters unchanged


def test_repr_and_plot(small) -> None:
    import matplotlib

    matplotlib.use("Agg")
    model, inputs, _ = small
    res = own_tune(model, inputs, {"min_block_size": [1, 2, 5], "priority": [("exact",), ("wrong",)]},
                   torch_compile=False)
    text = repr(res)
    best = res.trials[res.trials["trial"] == res.best_trial].iloc[0]
    assert text.startswith(f"<hv.tune: {len(res.trials)} trials")
    assert f"best     {best['priority']} mbs={best['min_block_size']}" in text and best["priority"] != "wrong"
    assert "default  exact>wrong mbs=5" in text and "eager PyTorch (your nn.Module)" in text
    ax = res.plot()
    labels = ax.get_legend_handles_labels()[1]
    assert {"measured", "mismatch", "best so far", "eager PyTorch (your nn.Module)"} <= set(labels)
    assert "<table" in res._repr_html_()


def test_explorer_find_fastest_runs_in_the_background_and_applies(small, scripted_timing) -> None:
    model, inputs, _ = small
    own = {**OWN, "fast": EVERY_CALL}
    ex = hv.explore(model, inputs, hv.Config(priority=("wrong", "exact", "fast"), support=own),
                    debounce=0)
    ex.buttons["apply_fastest"].click()                     # nothing found yet: a message, not an exception
    assert "find fastest" in ex.errors.get("action", "") and not ex.internal_errors
    assert ex.buttons["apply_fastest"].disabled
    thread = ex.find_fastest(budget=4, space={"min_block_size": [1, 2], "priority": [("fast",), ("wrong",)]},
                             measure={**FAST, "compilers": {**OWN_COMPILERS, **SCRIPTED_COMPILERS}})
    thread.join(timeout=120)
    assert not thread.is_alive() and ex.fastest is not None
    assert "fastest:" in ex.panels["fastest"].value and not ex.buttons["apply_fastest"].disabled
    best = ex.fastest.best
    assert best.priority == ("fast",)                       # the wrong backend is never offered
    assert "beats eager PyTorch (your nn.Module)" in ex.panels["fastest"].value
    runs = len(ex.history)
    ex.buttons["apply_fastest"].click()
    assert not ex.errors, ex.errors
    assert ex.config == best and len(ex.history) == runs + 1  # one re-run for all the controls
    ex.find_fastest(budget=0, wait=True)                     # a bad search is shown, never raised
    assert "the search failed" in ex.panels["fastest"].value and "budget" in ex.panels["fastest"].value
    assert not ex.internal_errors


@pytest.mark.slow
def test_cli_tune_writes_the_trials(tmp_path, capsys) -> None:
    from hierviz.cli.commands import main

    out = tmp_path / "tune.csv"
    assert main(["tune", "tiny_conv", "--budget", "2", "--iters", "3", "--warmup", "0",
                 "--csv", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out)
    assert len(table) == 2 and {"status", "fallbacks", "median_ms", "duplicate_of"} <= set(table.columns)
    assert "best" in printed and f"wrote {out}" in printed
    assert main(["tune", "tiny_conv", "--budget", "0", "--csv", str(out)]) == 2
    assert "budget" in capsys.readouterr().err
