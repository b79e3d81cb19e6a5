"""Issue 58 items 3 and 4: the explorer says what is happening to a result of the setting on
screen (measuring with its stage, measured, failed with its error, not asked), in the same
words in every panel, and what belonged to an earlier setting (a failure's banner, the
"fastest:" line, a compile-today failure) does not stay once another setting is shown."""

from __future__ import annotations

import copy
import html
import threading
from collections import Counter
from types import SimpleNamespace

import pandas as pd
import pytest

from hierviz.errors import MeasureError
from hierviz.partitioner.upstream.todays_compile import TodaysCompile
from hierviz.widget import Explorer, long_work
from hierviz.widget.worker import WorkerError


def latency_row(ex: Explorer) -> str:
    stats = ex.panels["stats"].value
    return stats[stats.index(">latency<"):]


def test_latency_row_says_measuring_then_shows_the_result(small, gated) -> None:
    fake, gate = gated
    model, inputs, _ = small
    ex = Explorer(model, inputs, measure=True, debounce=0)  # the first measurement is in flight
    row = latency_row(ex)
    assert "measuring ..." in row
    assert "error" not in row and "not measured" not in row
    gate.set()
    ex.measure_thread.join(60)
    row = latency_row(ex)
    assert f"{len(ex.partition.subgraphs):g} ms</b> median" in row and "measuring" not in row


def test_latency_row_says_failed_with_the_error_and_the_banner_goes_with_the_setting(small, fake_measure) -> None:
    model, inputs, _ = small
    fake_measure.fail = "TensorRT needs an NVIDIA GPU"
    ex = Explorer(model, inputs, measure=True, debounce=0)
    ex.measure_thread.join(60)
    assert "failed: TensorRT needs an NVIDIA GPU" in latency_row(ex)
    assert "Latency:" in ex.panels["error"].value
    ex.controls["measure"].value = False
    ex.controls["min_block_size"].value = 1  # another setting, not measured: nothing of the old failure stays
    assert "measure" not in ex.errors
    assert "NVIDIA GPU" not in ex.panels["error"].value and "NVIDIA GPU" not in ex.panels["stats"].value
    assert "not asked" in latency_row(ex)


def test_an_old_numerics_failure_does_not_stay_across_a_change(ex_small, monkeypatch) -> None:
    ex = ex_small

    def no_gpu(part, options=None):
        raise MeasureError("TensorRT needs an NVIDIA GPU")

    monkeypatch.setattr(ex.controller.long_work, "numerics", no_gpu)
    ex.check_numerics()
    assert "Numerics:" in ex.panels["error"].value
    assert "failed: TensorRT needs an NVIDIA GPU" in ex.panels["numerics"].value
    ex.controls["min_block_size"].value = 1
    assert "numerics" not in ex.errors and "Numerics:" not in ex.panels["error"].value
    assert "NVIDIA GPU" not in ex.panels["numerics"].value


def fake_search(base, budget, **options):
    """What hv.tune answers, standing in for a search in the worker: min_block_size=2 is best."""
    best = base.replace(min_block_size=2)
    trials = pd.DataFrame({"trial": [0, 1], "status": ["ok", "ok"], "median_ms": [3.0, 1.0]})
    return SimpleNamespace(default=base, best=best, best_trial=1, trials=trials, verdict="2.9x faster than eager",
                           beat_eager=True)


def test_an_old_fastest_line_does_not_stay_across_a_change(ex_small, monkeypatch) -> None:
    ex = ex_small
    monkeypatch.setattr(ex.controller.long_work, "tune", fake_search)
    ex.find_fastest(wait=True)
    best = ex.fastest.best
    ex.apply_fastest()  # the best setting: still the search's
    assert "fastest:" in ex.panels["fastest"].value
    ex.controls["min_block_size"].value = 1  # neither the setting searched from nor its best
    assert "fastest:" not in ex.panels["fastest"].value
    assert html.escape(best.label()) in ex.panels["fastest"].value  # what apply best still sets


def test_a_search_s_line_comes_back_with_the_setting_searched_from(ex_small, monkeypatch) -> None:
    """The search is kept in the store under the setting it started from: another setting shows
    the short note, going back shows the search's line again."""
    ex = ex_small
    searched = ex.config
    monkeypatch.setattr(ex.controller.long_work, "tune", fake_search)
    ex.find_fastest(wait=True)
    assert ex.controller.store.get("search", searched) is ex.fastest
    assert "fastest:" in ex.panels["fastest"].value
    ex.controls["min_block_size"].value = 1
    assert "the last search was from other settings" in ex.panels["fastest"].value
    ex.controls["min_block_size"].value = searched.min_block_size
    assert "fastest:" in ex.panels["fastest"].value and "2.9x faster" in ex.panels["fastest"].value


def test_a_failed_search_does_not_stay_across_a_change(ex_small, monkeypatch) -> None:
    ex = ex_small

    def no_gpu(base, budget, **options):
        raise MeasureError("TensorRT needs an NVIDIA GPU")

    monkeypatch.setattr(ex.controller.long_work, "tune", no_gpu)
    ex.find_fastest(wait=True)
    assert "the search failed: TensorRT needs an NVIDIA GPU" in ex.panels["fastest"].value
    assert ex.fastest is None
    ex.controls["min_block_size"].value = 1
    assert "NVIDIA GPU" not in ex.panels["fastest"].value and ex.fastest is None


def compile_today_line(ex: Explorer) -> str:
    stats = ex.panels["stats"].value
    return stats[stats.index("hv-compile-today"):]


def test_a_compile_today_failure_stays_with_its_setting(small, monkeypatch) -> None:
    """The line of min_block_size=5 fails in the worker; min_block_size=1 shows its own line;
    back on 5, the line is made again and says so, not the old failure."""
    _, inputs, gm = small
    graph = copy.deepcopy(gm)  # a graph of its own: no other test's line is cached for it
    gate = threading.Event()
    tries: Counter = Counter()

    def in_worker(self, kind, fast, here, progress=None):
        if kind != "compile_today":
            return here()
        tries[fast.min_block_size] += 1
        if fast.min_block_size == 5 and tries[5] == 1:
            raise WorkerError("the worker process was killed by SIGKILL")
        if fast.min_block_size == 5:
            assert gate.wait(60)
        return TodaysCompile(None, f"left out: stand-in line of {fast.min_block_size}", 0.0)

    monkeypatch.setattr(long_work.trt, "present", lambda: True)
    monkeypatch.setattr(long_work.LongWork, "_in_worker", in_worker)
    ex = Explorer(graph, inputs, debounce=0, min_block_size=5)
    ex.compile_today_thread.join(60)
    assert "failed: the worker process was killed by SIGKILL" in compile_today_line(ex)
    ex.controls["min_block_size"].value = 1
    ex.compile_today_thread.join(60)
    assert "stand-in line of 1" in compile_today_line(ex) and "SIGKILL" not in ex.panels["stats"].value
    ex.controls["min_block_size"].value = 5  # made again (held at the gate): it says so
    line = compile_today_line(ex)
    assert "computing ..." in line and "SIGKILL" not in line
    gate.set()
    ex.compile_today_thread.join(60)
    assert "stand-in line of 5" in compile_today_line(ex) and tries[5] == 2


def test_one_rule_for_the_setting_on_screen(ex_small) -> None:
    ex = ex_small
    store = ex.controller.store
    first = ex.config
    assert store.still(first)
    ex.controls["min_block_size"].value = 1
    assert store.still(ex.config) and not store.still(first)
    assert not store.still(None)


@pytest.fixture
def ex_small(small) -> Explorer:
    model, inputs, _ = small
    return Explorer(model, inputs, debounce=0)
