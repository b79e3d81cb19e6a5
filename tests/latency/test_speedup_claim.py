"""The one rule for claiming a speed-up (hierviz.latency.speedup_claim): an interval that is wide
(the machine was busy) or whose low end sits within a few percent of 1.0 is "no clear
difference", in hv.measure's verdict, hv.tune's crowning and verdict, and the explorer's lines."""

from __future__ import annotations

import pandas as pd
import pytest

import hierviz as hv
from hierviz.compare.tune_result import NO_WINNER, TuneResult, pick_best
from hierviz.compare.tune_verdict import judge
from hierviz.latency.measurement import verdict
from hierviz.latency.speedup_claim import MAX_WIDTH, MIN_GAIN, difference

BUSY = (1.08, 147.39)    # issue 55's verdict under a busy machine: "beats eager PyTorch (your nn.Module): 90.25x"
NARROW = (1.8, 2.1)


@pytest.mark.parametrize("ci, said", [
    (BUSY, "no clear difference from eager PyTorch"),
    (NARROW, "faster than eager PyTorch"),
    ((1.02, 1.04), "no clear difference from eager PyTorch"),      # narrow, but within a few percent of 1.0
    ((0.45, 0.55), "slower than eager PyTorch"),
    ((0.01, 0.9), "no clear difference from eager PyTorch"),       # slower, but 90x wide
    ((0.97, 1.03), "no clear difference from eager PyTorch"),
])
def test_the_rule_in_words(ci, said):
    assert verdict(ci) == said


def test_the_rule_is_symmetric_and_has_its_bounds():
    assert difference((MIN_GAIN * 1.01, MIN_GAIN * 1.5)) == "faster"
    assert difference((1 / (MIN_GAIN * 1.5), 1 / (MIN_GAIN * 1.01))) == "slower"
    assert difference((MIN_GAIN * 0.99, MIN_GAIN * 1.2)) == "unclear"     # low end too close to 1.0
    assert difference((1.5, 1.5 * MAX_WIDTH * 1.01)) == "unclear"         # too wide
    assert difference(None) == "unknown"


def _trials(cis):
    return pd.DataFrame({"trial": list(range(len(cis))), "status": ["measured"] * len(cis),
                         "outputs_match": [True] * len(cis), "fallbacks": [0] * len(cis),
                         "median_ms": [10.0 / (i + 1) for i in range(len(cis))], "speedup_ci": cis})


def test_tune_measures_again_a_clear_speedup_before_a_faster_unclear_one():
    # trial 2 is the fastest, its interval the busy one: trial 1's clear speed-up is measured again
    crowned, fastest = pick_best(_trials([(0.9, 1.1), NARROW, BUSY]))
    assert (crowned, fastest) == (1, 2)
    # no clear interval (a busy start): the fastest above 1.0 is measured again, interleaved, and
    # that measurement decides (see test_the_busy_verdict_says_no_clear_difference)
    assert pick_best(_trials([(0.9, 1.1), BUSY])) == (1, 1)
    assert pick_best(_trials([(0.9, 1.1), (0.5, 0.99)])) == (None, 1)


class _Measured:
    """The best setting's final measurement, as judge reads it."""

    def __init__(self, ci, speedup):
        self.speedup_ci, self.speedup, self.baseline_ms, self.median_ms = ci, speedup, 1.0, 1.0 / speedup
        self.baseline_wide, self.eager_timing = False, None
        self.verdict = verdict(ci)

    def nothing_accelerated_text(self):
        return ""


def _result(ci, speedup, trial):
    return TuneResult(best=hv.Config(), best_measurement=_Measured(ci, speedup), trials=_trials([(0.9, 1.1), ci]),
                      default=hv.Config(), baselines={}, space={}, device="cpu", best_trial=trial)


def test_the_busy_verdict_says_no_clear_difference():
    result = _result(BUSY, 90.25, 1)
    judge(result, {})
    assert not result.beat_eager
    assert result.verdict.startswith(NO_WINNER)
    assert result.verdict.endswith("90.25x (95% CI 1.08-147.39x): no clear difference from "
                                   "eager PyTorch (your nn.Module)")
    from hierviz.widget.panels import fastest_html

    line = fastest_html(result)
    assert "beats" not in line and "no clear difference" in line
    clear = _result(NARROW, 1.95, 1)
    judge(clear, {})
    assert clear.beat_eager
    assert clear.verdict == "trial 1 beats eager PyTorch (your nn.Module): 1.95x (95% CI 1.80-2.10x)"
