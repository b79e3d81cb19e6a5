"""foundation.delta_debugging.ddmin: the reduction the repro and the fix search share."""

from __future__ import annotations

from hypothesis import given, strategies as st

from hierviz.foundation.delta_debugging import ddmin


@given(st.lists(st.integers(0, 30), min_size=1, max_size=20, unique=True), st.data())
def test_the_result_holds_and_no_item_can_be_dropped(items, data):
    needed = set(data.draw(st.lists(st.sampled_from(items), min_size=1, max_size=4, unique=True)))
    calls = []

    def holds(part):
        calls.append(part)
        return needed <= set(part)

    found = ddmin(items, holds)
    assert set(found) == needed  # holds, and 1-minimal: every needed item, nothing else
    assert [x for x in items if x in found] == found  # in the items' order


def test_a_spent_budget_stops_with_what_it_has():
    calls = []

    def holds(part):
        calls.append(part)
        return 7 in part

    assert ddmin(list(range(16)), holds, budget=lambda: len(calls) < 2) == list(range(8))
    assert len(calls) == 2
