"""hv.sweep's, hv.compare_engines' and hv.tune's `measure=`: one MeasureOptions record, checked
before anything runs (a bad option stops the call, naming it, instead of failing every row),
and the same record carried to every row and trial."""

from __future__ import annotations

import pytest

import hierviz as hv
from hierviz.compare import tune_trial
from hierviz.latency.measure_options import MeasureOptions


def exact(gm, example_inputs):
    """A backend that runs the subgraph as it is: right, and quick to compile."""
    return gm


EXACT = hv.support.where(lambda n: n.op == "call_function", name="all")
BASE = hv.Config(priority=("exact",), support={"exact": EXACT}, min_block_size=1)
COMPILERS = {"exact": exact}


def test_a_sweep_measures_every_row_with_one_record(small, fake_measure) -> None:
    model, inputs, _ = small
    df = hv.sweep(model, inputs, {"min_block_size": [1, 2, 3]}, measure={"iters": 3, "compilers": COMPILERS},
                  progress=False)
    assert df["error"].isna().all() and len(fake_measure.calls) == 3
    records = [options for _, options in fake_measure.calls]
    assert all(r is records[0] for r in records) and isinstance(records[0], MeasureOptions)
    assert records[0].iters == 3 and records[0].compilers is COMPILERS


@pytest.mark.parametrize("call", ["sweep", "compare_engines"])
def test_a_bad_measure_option_stops_the_call_before_any_row(small, fake_measure, call) -> None:
    model, inputs, _ = small
    run = {"sweep": lambda m: hv.sweep(model, inputs, {"min_block_size": [1, 2]}, measure=m, progress=False),
           "compare_engines": lambda m: hv.compare_engines(model, inputs, measure=m)}[call]
    with pytest.raises(hv.MeasureError, match=r"^iters must be a positive integer, not 0$"):
        run({"iters": 0})
    with pytest.raises(hv.ConfigError, match=rf"^hv\.{call}\(measure=\.\.\.\): unknown argument\(s\) \['iter'\]; "
                                             r"did you mean 'iters'\?"):
        run({"iter": 3})
    assert fake_measure.calls == []  # nothing was measured


def test_a_bad_measure_option_stops_tune_before_any_trial(small, monkeypatch) -> None:
    model, inputs, _ = small
    measured: list[MeasureOptions] = []
    monkeypatch.setattr(tune_trial, "measure_with", lambda part, x, options: measured.append(options))
    with pytest.raises(hv.MeasureError, match=r"^on_error must be one of \('raise', 'fallback'\), not 'skip'$"):
        hv.tune(model, inputs, {"min_block_size": [1, 2]}, base=BASE, measure={"on_error": "skip"},
                progress=False)
    with pytest.raises(hv.ConfigError, match=r"^hv\.tune\(measure=\.\.\.\): unknown argument\(s\) \['warmups'\]"):
        hv.tune(model, inputs, {"min_block_size": [1, 2]}, base=BASE, measure={"warmups": 1}, progress=False)
    assert measured == []


def test_tune_times_every_trial_with_its_one_record(small, monkeypatch) -> None:
    model, inputs, _ = small
    measured: list[MeasureOptions] = []
    real = tune_trial.measure_with

    def seen(part, x, options):
        measured.append(options)
        return real(part, x, options)

    monkeypatch.setattr(tune_trial, "measure_with", seen)
    space = {"torch_executed_ops": [(), ("torch.ops.aten.relu.default",)]}  # two partitions
    result = hv.tune(model, inputs, space, base=BASE, budget=2, pruning=False,
                     measure={"warmup": 0, "iters": 4, "compilers": COMPILERS}, progress=False)
    assert list(result.trials["status"]) == ["measured", "measured"], result.trials["error"].tolist()
    quick = [o for o in measured if o.check and not o.baseline]
    full = [o for o in measured if not o.check and not o.baseline]
    final = [o for o in measured if o.baseline]
    assert len(quick) == len(full) == 2 and len(final) == 1
    # every timing is the user's record with hv.tune's changes: the same dict, not a re-spelled copy
    assert all(o.compilers is COMPILERS for o in measured)
    assert [(o.warmup, o.iters) for o in quick] == [(1, 4)] * 2              # hv.tune's quick timing
    assert [(o.warmup, o.iters) for o in full + final] == [(0, 4)] * 3       # the user's
    assert not any(o.per_subgraph for o in quick + full)
