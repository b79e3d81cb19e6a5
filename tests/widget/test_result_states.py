"""Issue 58 items 3 and 4: the explorer says what is happening to a result of the setting on
screen (measuring with its stage, measured, failed with its error, not asked), in the same
words in every panel, and what belonged to an earlier setting (a failure's banner, the
"fastest:" line) does not stay once another setting is shown."""

from __future__ import annotations

import html
from types import SimpleNamespace

import pytest

from hierviz.errors import MeasureError
from hierviz.widget import Explorer


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


def test_an_old_fastest_line_does_not_stay_across_a_change(ex_small) -> None:
    ex = ex_small
    searched = ex.config
    best = searched.replace(min_block_size=2)
    ex.fastest_search.result = SimpleNamespace(default=searched, best=best)
    ex.panels["fastest"].value = "fastest: <b>min_block_size=2</b> 1 ms (from min_block_size=5: 3 ms)"
    ex.apply_fastest()  # the best setting: still the search's
    assert "fastest:" in ex.panels["fastest"].value
    ex.controls["min_block_size"].value = 1  # neither the setting searched from nor its best
    assert "fastest:" not in ex.panels["fastest"].value
    assert html.escape(best.label()) in ex.panels["fastest"].value  # what apply best still sets


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
