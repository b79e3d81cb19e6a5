"""The diff diagram: `a.render(against=b)` marks what b does differently and dims the rest."""

from __future__ import annotations

import re

import pytest

import hierviz as hv
from hierviz.drawing.difference import CHANGED_LINE, DIM_FILL

from .stack_models import captured, even_partition, odd_fc2_partition, odd_partition, relu_in_torch
from .helpers import check_golden


@pytest.fixture(scope="module")
def pair() -> tuple[hv.Partition, hv.Partition]:
    gm = captured()
    return odd_partition(gm), odd_fc2_partition(gm)


def test_golden_modules_against(pair, regen_golden):
    a, b = pair
    g = a.render("modules", depth=1, against=b)
    check_golden(g.source, "diff_stack_modules.dot", regen_golden)
    # against b, blocks.2 differs, so it is no longer rolled up with its siblings
    assert g.info["rolled_up"] == ["blocks.0\u20131 \u00d72", "blocks.3\u20134 \u00d72"]


def test_golden_collapsed_against(pair, regen_golden):
    a, b = pair
    check_golden(a.render("collapsed", against=b).source, "diff_stack_collapsed.dot", regen_golden)


def test_changed_nodes_are_the_ones_hv_diff_lists(pair):
    a, b = pair
    table = hv.diff(a, b)
    assert "linear_6" in set(table["node"])  # blocks.2.fc2: tensorrt in a, torch in b
    src = a.render("full", against=b).source
    assert f"{len(table)} node(s) change backend or subgraph" in src  # the legend says it
    marked = re.findall(r"\n\t*(n\d+) \[[^\n]*color=\"" + CHANGED_LINE + '"', src)
    assert len(marked) == len(table)
    assert "tensorrt \u2192 torch" in src


def test_unchanged_boxes_are_dimmed(pair):
    a, b = pair
    src = a.render("modules", depth=1, against=b).source
    box = {m.group(1): m.group(0) for m in re.finditer(r"\n\t*(m\d+) \[label=<.*", src)}
    inp = next(line for line in box.values() if "<B>inp</B>" in line)
    odd = next(line for line in box.values() if "<B>blocks.2</B>" in line)
    # inp's linear stays in the first subgraph: dimmed; blocks.2 holds the changed fc2
    assert f'fillcolor="{DIM_FILL}"' in inp
    assert f'color="{CHANGED_LINE}"' in odd and "tensorrt \u2192 torch \u00d71" in odd


def test_against_itself_changes_nothing(pair):
    a, _ = pair
    src = a.render("modules", against=a).source
    assert "0 node(s) change backend or subgraph" in src and "changed:" not in src


def test_every_block_changes_when_every_relu_moves():
    gm = captured()
    g = even_partition(gm).render("modules", depth=1, against=relu_in_torch(gm))
    assert g.info["rolled_up"] == ["blocks.0\u20134 \u00d75"]  # all five change the same way
    assert "tensorrt \u2192 torch \u00d75" in g.source


def test_wrong_against_is_refused(pair):
    a, _ = pair
    with pytest.raises(hv.RenderError, match="another hv.Partition"):
        a.render("modules", against="b")
    other = hv.partition(hv.zoo.synthetic(40))
    with pytest.raises(hv.RenderError, match="same graph"):
        a.render("collapsed", against=other)
