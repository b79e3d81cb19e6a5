"""hv.tune and hv.sweep(measure=True): a setting whose outputs differ names the subgraph where
the error starts (`mismatch_at`), found by hv.numerics on the subgraphs it measured."""

from __future__ import annotations

import pandas as pd
import torch

import hierviz as hv

TANH = "torch.ops.aten.tanh.default"
FAST = {"warmup": 0, "iters": 2}


def exact(gm, example_inputs):
    return gm


def off_by_one(gm, example_inputs):
    """Right shapes, every value one too high."""
    def run(*args):
        out = gm(*args)
        return tuple(t + 1 for t in out) if isinstance(out, (tuple, list)) else out + 1
    return run


SUPPORT = {"exact": hv.support.where(lambda n: n.op == "call_function" and str(n.target) != "aten.tanh.default",
                                     name="all but tanh"),
           "wrong": hv.support.ops([TANH])}
BASE = hv.Config(priority=("exact", "wrong"), support=SUPPORT, min_block_size=1)
MEASURE = {**FAST, "compilers": {"exact": exact, "wrong": off_by_one}}


def _wrong_tag(gm, config) -> str:
    (tag,) = [sg.tag for sg in hv.partition(gm, config).subgraphs if sg.backend == "wrong"]
    return tag


def test_sweep_names_the_subgraph_where_the_mismatch_starts(small) -> None:
    model, inputs, gm = small
    df = hv.sweep(model, inputs, {"priority": [("exact",), ("exact", "wrong")]}, base=BASE, measure=MEASURE,
                  progress=False)
    assert "mismatch_at" in df.columns
    right, wrong = df.iloc[0], df.iloc[1]
    assert right["outputs_match"] and pd.isna(right["mismatch_at"])
    assert not wrong["outputs_match"]
    expected = _wrong_tag(gm, BASE)
    assert wrong["mismatch_at"] == expected
    exact_tags = [sg.tag for sg in hv.partition(gm, BASE).subgraphs if sg.backend == "exact"]
    assert exact_tags and wrong["mismatch_at"] not in exact_tags  # the exact subgraphs before it are not blamed


def test_tune_mismatch_row_names_the_culprit(small) -> None:
    model, inputs, gm = small
    res = hv.tune(model, inputs, {"priority": [("exact",), ("exact", "wrong")]}, base=BASE, measure=MEASURE,
                  pruning=False, progress=False, budget=4)
    t = res.trials.set_index("priority")
    row = t.loc["exact>wrong"]
    assert row["status"] == "mismatch"
    expected = _wrong_tag(gm, BASE)
    assert row["mismatch_at"] == expected
    assert f"the error starts in {expected}" in row["error"]
    assert f"the error starts in {expected}; outputs differ from eager PyTorch (max abs error " in row["error"]
    assert pd.isna(t.loc["exact", "mismatch_at"])
    assert res.best is None or res.best.priority != ("exact", "wrong")


def test_measurement_repr_names_where_the_error_starts(small) -> None:
    from hierviz.latency.measure_options import MeasureOptions
    from hierviz.latency.numerics import with_mismatch

    _, inputs, gm = small
    part = hv.partition(gm, BASE)
    m = hv.measure(part, inputs, **MEASURE, baseline=False, per_subgraph=False)
    assert m.outputs_match is False and m.mismatch_at is None
    named = with_mismatch(part, inputs, m, MeasureOptions.of(MEASURE))
    tag = named.mismatch_at
    assert tag == _wrong_tag(gm, BASE)
    assert m.mismatch_at is None  # the measurement returned before is left as it was
    assert f"starting in {tag}" in repr(named) and named.to_dict()["mismatch_at"] == tag
    assert torch.is_tensor(inputs[0])  # inputs untouched by the check


def test_a_failed_ray_trial_says_its_error_and_a_dead_worker_as_it_is() -> None:
    """hierviz's errors and a dead Ray worker read as they say it; any other exception names its
    type, whatever its words (the type, not the text, decides)."""
    from hierviz.compare.ray_executor import WorkerDied
    from hierviz.compare.tuning import error_text

    assert error_text(WorkerDied("the Ray worker running it died (OSError: gone)")) == \
        "the Ray worker running it died (OSError: gone)"
    assert error_text(hv.MeasureError(" no GPU ")) == "no GPU"
    assert error_text(RuntimeError("a Ray worker said no")) == "RuntimeError: a Ray worker said no"
