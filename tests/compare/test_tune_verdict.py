"""hv.tune's verdicts with scripted timings (no timing noise decides a test): a setting is
best only when its speed-up interval over the eager nn.Module lies above 1.0; otherwise the
default setting is best with "no setting beat eager PyTorch (your nn.Module) here"; a partition that
accelerates nothing is never measured nor best; the interval shows in trials, reprs, the
explorer's line and hv.measure's repr."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.compare.tune_result import EAGER_MODULE, NO_WINNER
from hierviz.latency.measurement import ci_text
from hierviz.latency.timing import speedup_interval

from tests.small_net import JITTER, SCRIPTED_COMPILERS, ScriptedClock

EVERY_CALL = hv.support.where(lambda node: node.op == "call_function", name="every op")
SUPPORT = {"fast": EVERY_CALL, "same": EVERY_CALL}


def tune(model, inputs, space, base_priority=("same",), **kwargs):
    return hv.tune(model, inputs, space, base=hv.Config(priority=base_priority, support=SUPPORT),
                   measure={"warmup": 0, "iters": 20, "compilers": SCRIPTED_COMPILERS}, pruning=False, progress=False,
                   **kwargs)


def test_interval_is_deterministic_and_tells_noise_from_speed():
    eager = [10 * (1 + j) for j in JITTER[:100]]
    assert speedup_interval(eager, eager) == speedup_interval(eager, eager)  # the same samples, the same interval
    low, high = speedup_interval(eager, [x * 1.01 for x in eager])
    assert low < 1.0 < high                                 # 1% slower within 3% noise: no verdict
    low, high = speedup_interval(eager, [x / 2 for x in eager])
    assert 1.9 < low <= 2.0 <= high < 2.1
    assert speedup_interval([], eager) is None


def test_measure_keeps_samples_and_reports_the_interval(small, scripted_timing):
    model, inputs, gm = small
    part = hv.partition(gm, priority=("fast",), support=SUPPORT, min_block_size=1)
    m = hv.measure(part, inputs, compilers=SCRIPTED_COMPILERS, warmup=0, iters=40, per_subgraph=False)
    assert len(m.timing.samples_ms) == 40 and len(m.eager_timing.samples_ms) == 40
    low, high = m.speedup_ci
    assert 1.9 < low <= m.speedup <= high < 2.1
    assert m.verdict == f"faster than {EAGER_MODULE}"
    assert f"speedup 2.00x (95% CI {low:.2f}-{high:.2f}x: faster than {EAGER_MODULE})" in repr(m)
    assert m.to_dict()["speedup_ci"] == m.speedup_ci
    same_part = hv.partition(gm, priority=("same",), support=SUPPORT, min_block_size=1)
    m2 = hv.measure(same_part, inputs, compilers=SCRIPTED_COMPILERS, warmup=0, iters=40, per_subgraph=False)
    assert m2.speedup_ci[0] < 1.0 < m2.speedup_ci[1] and m2.verdict == f"no clear difference from {EAGER_MODULE}"


def test_a_setting_that_beats_eager_is_crowned(small, scripted_timing):
    model, inputs, _ = small
    res = tune(model, inputs, {"priority": [("same",), ("fast",)]})
    t = res.trials.set_index("priority")
    assert res.beat_eager and res.best.priority == ("fast",)
    assert t.loc["fast", "speedup_ci"][0] > 1.0 and t.loc["same", "speedup_ci"][0] < 1.0
    assert res.verdict.startswith(f"trial {res.best_trial} beats eager PyTorch (your nn.Module): 2.00x (95% CI")
    assert res.best_measurement.speedup_ci[0] > 1.0      # confirmed by the final measurement
    assert "verdict: trial" in repr(res) and "95% CI" in repr(res)


def test_no_setting_beat_eager_means_the_default_is_best(small, scripted_timing):
    model, inputs, _ = small
    res = tune(model, inputs, {"min_block_size": [1, 2, 3]})
    assert set(res.trials["status"]) <= {"measured", "duplicate"}
    assert not res.beat_eager and res.best == res.default and res.best_trial == 0
    m = res.best_measurement
    assert res.verdict == (NO_WINNER + f"; best is the default setting; it measured {m.speedup:.2f}x "
                           f"({ci_text(m.speedup_ci)}): no clear difference from {EAGER_MODULE}")  # its figures
    assert m.verdict == f"no clear difference from {EAGER_MODULE}"
    assert res.fastest_trial is not None                    # a fastest trial exists, yet it is not crowned
    assert "verdict: no setting beat eager PyTorch (your nn.Module) here" in repr(res)
    assert res.best_measurement is not None and res.best_measurement.config == res.default
    from hierviz.widget.panels import fastest_html

    line = fastest_html(res)
    assert "no setting beat eager PyTorch (your nn.Module) here" in line and "keep" in line


def test_nothing_accelerated_is_never_measured_nor_best(small, scripted_timing):
    model, inputs, gm = small
    n_ops = sum(node.op == "call_function" for node in gm.graph.nodes)
    # min_block_size above the graph's size demotes every subgraph: all PyTorch, like mnasnet
    # with its one convolution forced to torch in issue 21
    res = tune(model, inputs, {"min_block_size": [5, n_ops + 1]}, base_priority=("fast",))
    t = res.trials.set_index("min_block_size")
    row = t.loc[n_ops + 1]
    assert row["status"] == "nothing accelerated" and row["acc_subgraphs"] == 0
    assert "every node runs in PyTorch" in row["error"] and row["median_ms"] != row["median_ms"]  # not measured
    assert res.best.min_block_size == 5 and res.beat_eager
    assert "1 nothing accelerated" in repr(res)


def test_a_bare_graph_is_compared_with_the_captured_graph_run_eagerly(small, scripted_timing):
    from hierviz.partitioner.graph_copy import copy_graph_module

    _, inputs, gm = small
    bare = copy_graph_module(gm)  # a graph hv.capture did not make: no nn.Module to time
    res = tune(bare, inputs, {"min_block_size": [1, 2]})
    assert res.baselines["eager_ms"] is None and res.baselines["graph_eager_ms"] == pytest.approx(10.0, rel=0.05)
    assert res.verdict.startswith("no setting beat eager PyTorch (the captured graph) here")


def test_a_failed_baseline_says_why_in_the_result(small, scripted_timing, monkeypatch):
    """Eager PyTorch (the captured graph) is a bare graph's baseline: when it fails, the result's notes
    and repr say why (before, the error was dropped and only 'no baseline' showed)."""
    from hierviz.compare import tune_trial
    from hierviz.partitioner.graph_copy import copy_graph_module

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(tune_trial, "lift", out_of_memory)
    _, inputs, gm = small
    res = tune(copy_graph_module(gm), inputs, {"min_block_size": [1, 2]})
    why = [n for n in res.notes if n.startswith("eager PyTorch (the captured graph) baseline:")]
    assert len(why) == 1 and "failed to run eagerly on cpu: RuntimeError: CUDA out of memory" in why[0]
    assert f"note: {why[0]}" in repr(res)
    assert res.trials["speedup"].isna().all()  # no baseline to divide by while searching


class _BurstAtStart(ScriptedClock):
    """The scripted clock, but the first 10 timed calls (half the eager baseline hv.tune times
    first, while TorchInductor's compile workers would still be busy) run 100x slower."""

    def __call__(self) -> int:
        before = self.now
        now = super().__call__()
        if self.reads % 2 == 0 and self.reads // 2 <= 10:
            self.now = before + (now - before) * 100
        return self.now


def test_verdict_beat_eager_and_best_line_come_from_the_final_measurement(small, monkeypatch):
    """A busy start made the first eager baseline look ~50x slower (issue 31: '209.55x vs eager'
    beside 'eager nn.Module 106.9 ms'): the trials' rows show it, but the verdict, beat_eager,
    the best line and the eager baseline shown all come from the final measurement, timed
    interleaved with the eager model, and the wide start is flagged."""
    import hierviz.latency.timing as timing

    monkeypatch.setattr(timing, "CLOCK", _BurstAtStart())
    model, inputs, _ = small
    res = tune(model, inputs, {"priority": [("same",), ("fast",)]})
    rows = res.trials.set_index("priority")
    assert rows.loc["fast", "speedup"] > 20                 # against the busy start
    m = res.best_measurement
    assert res.best.priority == ("fast",) and res.beat_eager == (m.speedup_ci[0] > 1.0) is True
    assert 1.9 < m.speedup_ci[0] <= m.speedup <= m.speedup_ci[1] < 2.1
    assert res.verdict == f"trial {res.best_trial} beats {EAGER_MODULE}: {m.speedup:.2f}x ({ci_text(m.speedup_ci)})"
    best_line = next(line for line in repr(res).splitlines() if line.strip().startswith("best"))
    assert f"{m.speedup:.2f}x ({ci_text(m.speedup_ci)}) vs eager PyTorch (your nn.Module)" in best_line
    assert res.baselines["eager_ms"] == pytest.approx(10.0, rel=0.05)  # not the busy start's
    assert any(n.startswith("at the start, the eager PyTorch baseline's own timing spread is wide") for n in res.notes)


class _TwoLinear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


def test_the_eager_baseline_has_one_name_whether_the_search_had_the_model_or_its_graph(scripted_timing):
    """hv.tune(model) compares with the nn.Module, the explorer's "find fastest" (in its worker)
    with the captured graph: both are "eager PyTorch" to a user, and say which ran in the same
    short form, in the verdict, the explorer's line, the repr's baselines and the plot's legend."""
    import matplotlib

    from hierviz.partitioner.graph_copy import copy_graph_module
    from hierviz.widget.panels import fastest_html

    matplotlib.use("Agg")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model, inputs = _TwoLinear().eval(), (torch.randn(2, 8),)
    by_model = tune(model, inputs, {"min_block_size": [1, 2]})
    by_graph = tune(copy_graph_module(hv.capture(model, inputs)), inputs, {"min_block_size": [1, 2]})
    for res, ran in ((by_model, "your nn.Module"), (by_graph, "the captured graph")):
        name = f"eager PyTorch ({ran})"
        assert res.against == name
        assert res.verdict.startswith(f"no setting beat {name} here; best is the default setting")
        assert res.verdict.endswith(f"no clear difference from {name}")
        assert f"no setting beat {name} here" in fastest_html(res)
        assert "  baselines: eager PyTorch (your nn.Module) " in repr(res)
        assert "; eager PyTorch (the captured graph) " in repr(res)
        assert name in res.plot().get_legend_handles_labels()[1]
