"""hv.tune's verdict: whether the best setting beat what the trials were timed against, and the
sentence that says so, from one source, the best setting's final measurement."""

from __future__ import annotations

from typing import Any

from hierviz.compare.tune_result import TuneResult
from hierviz.latency.baseline_names import EAGER_MODULE
from hierviz.latency.measurement import ci_text, verdict, wide_baseline_note
from hierviz.latency.speedup_claim import clear_gain


def judge(result: TuneResult, baselines: dict[str, Any]) -> None:
    """`verdict` and `beat_eager`, from one source: the best setting's final measurement
    (what `best_measurement` shows), its speed-up interval timed interleaved with the
    baseline (`result.against`: what the trials were timed against), claimed by the rule of
    hierviz.latency.speedup_claim. The baselines shown are that measurement's too: `baselines`
    takes its eager figure. `result.not_timed` (TensorRT kept, not timed here) ends it."""
    m, trial, against = result.best_measurement, result.best_trial, result.against
    ci = getattr(m, "speedup_ci", None)
    result.beat_eager = m is not None and clear_gain(ci)
    figure = f"{m.speedup:.2f}x ({ci_text(ci)})" if m is not None and m.speedup and ci else ""
    if result.beat_eager:
        who = "the default setting" if trial == 0 else f"trial {trial}"
        result.verdict = f"{who} beats {against}: {figure}"
    else:
        result.verdict = f"no setting beat {against} here"
        if result.best is not None and trial != 0:
            result.verdict += f"; best is trial {trial}, the fastest (not compared with {against})"
        elif result.best is not None:
            result.verdict += "; best is the default setting"
            status = result.trials.loc[result.trials["trial"] == 0, "status"]
            if len(status) and status.iloc[0] not in ("measured", "nothing accelerated"):
                result.verdict += f" (its own trial: {status.iloc[0]})"
        if figure:  # the baseline named as above; its wide spread is said once, below
            said = verdict(ci, against)
            lead = "" if result.not_timed else m.nothing_accelerated_text()  # kept TensorRT ran eagerly
            result.verdict += f"; it measured {figure}: " + (f"{lead}; {said}" if lead else said)
    if m is not None and m.baseline_wide:
        result.verdict += f"; {wide_baseline_note(m.eager_timing)}"
    if result.not_timed:
        result.verdict += f"; {result.not_timed}"
    if m is not None and getattr(m, "baseline_ms", None) is not None and against == EAGER_MODULE:
        # the figure shown is the one timed beside the best setting; the trials' speed-ups use the start's
        baselines["eager_start_ms"] = baselines.get("eager_ms")
        baselines["eager_ms"] = m.baseline_ms
