"""The diff diagram: `a.render(against=b)` marks what b does differently and dims the rest."""

from __future__ import annotations

import re

import pytest

import hierviz as hv
from hierviz.drawing.diff_overlay import CHANGED_LINE, DIM_FILL, REGROUPED_LINE

from .stack_models import captured, even_partition, odd_fc2_partition, odd_partition, relu_in_torch
from .helpers import check_golden, dot_statements


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
    kinds = dict(zip(table["node"], table["change"]))
    assert kinds["linear_6"] == "backend"  # blocks.2.fc2: tensorrt in a, torch in b
    assert set(kinds.values()) == {"backend", "split", "merged"}  # relu_2 (torch) is joined by fc2
    src = a.render("full", against=b).source
    # the title counts each kind
    assert "diff: 1 node changes backend, 1 subgraph split, 1 merged" in src
    strong = re.findall(r"\n\t*(n\d+) \[[^\n]*color=\"" + CHANGED_LINE + '"', src)
    light = re.findall(r"\n\t*(n\d+) \[[^\n]*color=\"" + REGROUPED_LINE + '"', src)
    index = a.records.position
    assert sorted(strong) == sorted(f"n{index[n]}" for n, c in kinds.items() if c == "backend")
    assert sorted(light) == sorted(f"n{index[n]}" for n, c in kinds.items() if c != "backend")
    assert "tensorrt \u2192 torch" in src
    dimmed = re.findall(r"\n\t*(n\d+) \[[^\n]*fillcolor=\"" + DIM_FILL + '"', src)
    assert dimmed and not set(dimmed) & set(strong + light)


def test_unchanged_boxes_are_dimmed(pair):
    a, b = pair
    src = a.render("modules", depth=1, against=b).source
    box = {s.name: s.line for s in dot_statements(src) if re.fullmatch(r"m\d+", s.name) and "label" in s.attrs}
    inp = next(line for line in box.values() if "<B>inp</B>" in line)
    odd = next(line for line in box.values() if "<B>blocks.2</B>" in line)
    head = next(line for line in box.values() if "<B>head</B>" in line)
    # inp's linear stays in the first subgraph: dimmed; blocks.2 holds the changed fc2
    assert f'fillcolor="{DIM_FILL}"' in inp
    assert f'color="{CHANGED_LINE}"' in odd and "1 node changes backend</B> (tensorrt \u2192 torch \u00d71)" in odd
    # head keeps tensorrt, but its subgraph lost blocks.2's fc2: marked lightly, not dimmed
    assert f'color="{REGROUPED_LINE}"' in head and "regrouped, same backend: split \u00d71" in head
    assert f'fillcolor="{DIM_FILL}"' not in head


def test_against_itself_changes_nothing(pair):
    a, _ = pair
    src = a.render("modules", against=a).source
    assert "diff: no change" in src and "change backend" not in src and "regrouped" not in src


def test_every_block_changes_when_every_relu_moves():
    gm = captured()
    g = even_partition(gm).render("modules", depth=1, against=relu_in_torch(gm))
    assert g.info["rolled_up"] == ["blocks.0\u20134 \u00d75"]  # all five change the same way
    assert "tensorrt \u2192 torch \u00d75" in g.source and "diff: 5 nodes change backend" in g.source


def test_wrong_against_is_refused(pair):
    a, _ = pair
    with pytest.raises(hv.RenderError, match="another hv.Partition"):
        a.render("modules", against="b")
    other = hv.partition(hv.zoo.synthetic(40))
    with pytest.raises(hv.RenderError, match="no op node in common"):
        a.render("collapsed", against=other)
