"""With "measure" on, a setting change never waits for the measurement (issue 43): the counts
and the diagram of the new setting are shown while the measurement of the one before is still
in flight; when it arrives it is kept for the setting it belongs to, shown there (its history
row, the panel when that setting is shown again), and never as the new setting's."""

from __future__ import annotations



from hierviz.widget import Explorer


def test_a_change_is_shown_while_the_last_measurement_is_in_flight(small, gated) -> None:
    fake, gate = gated
    model, inputs, _ = small
    ex = Explorer(model, inputs, measure=True, debounce=0)  # returns with the first measurement in flight
    first = ex.controller.shown
    assert ex.measuring.running and not fake.calls
    ex.controls["min_block_size"].value = 1                 # the change is applied at once
    second = ex.controller.shown
    assert second.config != first.config and ex.partition is second
    assert "ms</b> median" not in ex.panels["stats"].value  # nothing measured is shown for it yet
    assert "<svg" in ex.panels["diagram"].value
    gate.set()
    ex.measure_thread.join(60)
    assert not ex.measuring.running
    measured = [cfg for cfg, _ in fake.calls]
    # the first setting's measurement is kept for it; a newer request waited and replaced no result
    m1 = ex.controller.measurement_of(first)
    assert measured[0] == first.config and m1 is not None and m1.median_ms == len(first.subgraphs)
    rows = ex.history
    assert rows["median_ms"].iloc[0] == len(first.subgraphs)
    m2 = ex.controller.measurement_of(second)
    assert measured[-1] == second.config and m2.median_ms == len(second.subgraphs)
    assert rows["median_ms"].iloc[-1] == len(second.subgraphs)
    assert f"{len(second.subgraphs):g} ms</b> median" in ex.panels["stats"].value


def test_a_measurement_that_arrives_after_a_change_is_not_shown_as_the_new_settings(small, gated) -> None:
    fake, gate = gated
    model, inputs, _ = small
    ex = Explorer(model, inputs, measure=True, debounce=0)
    first = ex.controller.shown
    ex.controls["measure"].value = False                     # the next setting is not measured
    ex.controls["min_block_size"].value = 1
    gate.set()
    ex.measure_thread.join(60)
    assert [cfg for cfg, _ in fake.calls] == [first.config]
    assert ex.controller.measurement_of(ex.controller.shown) is None
    assert "ms</b> median" not in ex.panels["stats"].value  # the first setting's number is not shown here
    assert ex.history["median_ms"].iloc[0] == len(first.subgraphs)
    assert ex.history["median_ms"].isna().iloc[-1]
    ex.controls["min_block_size"].value = first.config.min_block_size  # back: its own measurement, at once
    assert f"{len(first.subgraphs):g} ms</b> median" in ex.panels["stats"].value
