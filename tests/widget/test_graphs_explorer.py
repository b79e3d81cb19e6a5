"""hv.explore(model, inputs, ir="torch_compile"): a graph picker, the picked graph's Explorer, and
every graph re-partitioned and redrawn at the same settings; a setting follows the user from
graph to graph; no exception reaches the kernel."""

from __future__ import annotations

import pytest

import hierviz as hv
from tests.dynamo_models import load


@pytest.fixture(scope="module")
def prints():
    model, x = load("prints")
    return model, x, hv.capture(model, x, ir="torch_compile")


def test_every_graph_or_one_picked(prints) -> None:
    model, x, cap = prints
    gx = hv.explore(model, x, ir="torch_compile", debounce=0, min_block_size=2)
    assert isinstance(gx, hv.widget.GraphsExplorer)
    assert [v for _, v in gx.picker.options] == [0, 1]
    k = gx.picker.value
    assert gx.explorer.partition.stats == hv.partition(cap, min_block_size=2).graphs[k].stats
    assert gx.every.value.count("<svg") == 1 and "2 graphs, 1 breaks" in gx.every.value

    gx.explorer.controls["min_block_size"].value = 7  # a setting change: the picked graph and every graph
    want = hv.partition(cap, min_block_size=7)
    assert gx.explorer.partition.stats == want.graphs[k].stats
    assert gx.partition.config.min_block_size == 7 and gx.partition.stats == want.stats
    assert f"{want.stats['subgraphs']} subgraphs" in gx.every.value

    other = 1 - k
    gx.picker.value = other  # the setting follows to the other graph
    assert gx.explorer.config.min_block_size == 7
    assert gx.explorer.partition.stats == want.graphs[other].stats
    assert not gx.internal_errors and gx.error.value == ""
    gx.close()


def test_a_multi_graph_partition_opens_too_and_mistakes_stay_in_the_widget(prints) -> None:
    _, _, cap = prints
    part = hv.partition(cap, min_block_size=3)
    gx = hv.explore(part, debounce=0)
    assert gx.partition.config.min_block_size == 3 and gx.explorer.config.min_block_size == 3
    gx.explorer.controls["priority"].value = ()  # no backend at all: refused, shown, never raised
    assert not gx.internal_errors
    gx.close()
    with pytest.raises(hv.ConfigError, match="ir="):
        hv.explore(cap, ir="torchcompile")
