"""The smallest failing part's search (hierviz.building.reduction.smallest_failing) on synthetic
graphs with a builder written in the test: it finds a part that fails the same way, no larger
than the block bisection gives, in at most 2*log2(N) + 8 builds of a subgraph of N nodes."""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import pytest
import torch
from hypothesis import given, settings, strategies as st

from hierviz.building.reduction import call_nodes, same_failure, signature, smallest_failing


@dataclass(frozen=True)
class Made:
    stage: str
    exception: str | None = None
    error: str | None = None
    error_cut: bool = False


def chain(n: int) -> torch.fx.GraphModule:
    """x -> n steps of call nodes: each the relu of the one before, every third also adding the node
    three back (values that cross a part's edge both ways), every fifth a pair of values (as
    native_layer_norm's tuple) and the getitem that reads one: a part cannot start at the getitem."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = torch.zeros(2)
    made = [x]
    for i in range(n):
        if i % 5 == 4:
            pair = graph.call_function(torch.std_mean, (made[-1],))
            pair.meta["val"] = (torch.zeros(()), torch.zeros(()))
            node = graph.call_function(operator.getitem, (pair, 0))
        else:
            node = graph.call_function(torch.relu, (made[-1],))
        node.meta["val"] = torch.zeros(2)
        if i % 3 == 2:
            node = graph.call_function(torch.add, (node, made[-3]))
            node.meta["val"] = torch.zeros(2)
        made.append(node)
    graph.output(made[-1])
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def first_start(gm: torch.fx.GraphModule, name: str) -> str:
    """Where a part holding node `name` can start at the latest: the node itself, or for a getitem
    of a pair, the pair's node."""
    node = next(n for n in gm.graph.nodes if n.name == name)
    return node.args[0].name if node.target is operator.getitem else name


class FailsWith:
    """A builder whose engine fails (stage 'build', TensorRT-like words naming the first needed node
    and an address) when the part holds every node of `needed`, fails otherwise when it holds some
    of them, and builds when it holds none. Counts its calls."""

    def __init__(self, needed: set[str]) -> None:
        self.needed, self.calls = needed, 0

    def __call__(self, part: torch.fx.GraphModule) -> tuple[Made, bool]:
        self.calls += 1
        names = set(call_nodes(part))
        held = sorted(self.needed & names)
        if held and held == sorted(self.needed):
            error = f"Myelin: internal error at {held[0]} (operand.cpp:156, 0x7f3a)"
            return Made("build", "RuntimeError", error), False
        if held:
            return Made("build", "RuntimeError", f"Could not find any implementation for {held[0]}"), False
        return Made("built"), False


def reduces_within_the_bound(gm: torch.fx.GraphModule, needed: set[str]) -> None:
    """smallest_failing on `gm`, whose engine fails when a part holds every node of `needed`."""
    nodes = call_nodes(gm)
    builder = FailsWith(needed)
    whole = builder(gm)[0]
    builder.calls = 0
    found = smallest_failing(gm, builder)
    assert builder.calls <= 2 * math.log2(len(nodes)) + 8
    assert found.builds == builder.calls
    part = builder(found.graph)[0]
    assert same_failure(signature(part.stage, part.exception, part.error, nodes),
                        signature(whole.stage, whole.exception, whole.error, nodes))
    assert needed <= set(found.nodes) == set(call_nodes(found.graph))
    start = min(nodes.index(first_start(gm, name)) for name in needed)
    last = max(nodes.index(name) for name in needed)
    assert len(found.nodes) <= last - start + 1  # no larger than the block from the first needed node to the last
    assert list(found.nodes) == [name for name in nodes if name in found.nodes]  # in the graph's order


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 200), st.data())
def test_the_part_fails_the_same_way_within_the_bound(n, data):
    gm = chain(n)
    needed = data.draw(st.lists(st.sampled_from(call_nodes(gm)), min_size=1, max_size=4, unique=True))
    reduces_within_the_bound(gm, set(needed))


def test_a_failure_of_twelve_nodes_in_a_row_among_89_as_gpt2s():
    gm = chain(89)
    nodes = call_nodes(gm)
    reduces_within_the_bound(gm, {nodes[40], nodes[45], nodes[51]})
