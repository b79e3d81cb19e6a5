"""Graph breaks as blockers, hv.check, hv.diff and hv.sweep on a real model outside the zoo:
torchvision's ssdlite320_mobilenet_v3_large (random weights), which torch.export refuses and
torch.compile splits into 7 graphs at 6 graph breaks (the `ssdlite` session fixture)."""

from __future__ import annotations

import pytest

import hierviz as hv
from hierviz.partitioner.by_graph.joined_graphs import join
from hierviz.partitioner.blockers.multi_blockers import BREAK_KIND

pytestmark = pytest.mark.slow


def test_blockers_check_diff_and_sweep(ssdlite) -> None:
    model, inputs, cap = ssdlite
    part = hv.partition(cap)
    table = part.blockers()
    breaks = table[table.kind == BREAK_KIND]
    assert len(breaks) == len(cap.breaks) == 6
    # the first break sits between two TensorRT blocks: removing it is one engine fewer
    first = cap.breaks[0]
    assert first.ended_graph and first.after_graph == 0
    assert part.graphs[0].subgraphs[-1].backend == "tensorrt" == part.graphs[1].subgraphs[0].backend
    row = breaks[breaks.change.str.contains(f"{first.location} ", regex=False) & (breaks.subgraphs_saved != 0)].iloc[0]
    by_hand = hv.partition(join(cap.graphs[0].graph, cap.graphs[1].graph, cap.graphs[1].sources, 0))
    pair = part.graphs[0].stats["subgraphs"] + part.graphs[1].stats["subgraphs"]
    assert row.subgraphs_saved == pair - by_hand.stats["subgraphs"] >= 1
    assert row.graph == "g0, g1" and first.location in row.change

    # an op cause across graphs: its figures are every graph re-partitioned without it
    op = next(o for o in cap.graphs[0].ops if o.endswith("hardswish.default") or o.endswith("relu.default"))
    forced = hv.partition(cap, torch_executed_ops={op})
    cause = forced.blockers(kind="forced").iloc[0]
    fixed = hv.partition(cap, config=cause.config)
    assert cause.subgraphs_if_fixed == fixed.stats["subgraphs"] == part.stats["subgraphs"]
    assert cause.accelerated_ops_gained == fixed.stats["accelerated_ops"] - forced.stats["accelerated_ops"] > 0

    with pytest.raises(hv.PartitionCheckError) as info:
        hv.check(forced, max_subgraphs=part.stats["subgraphs"], like=part)
    text = str(info.value)
    assert "7 graphs, 6 graph breaks" in text and f"subgraphs {forced.stats['subgraphs']} > max_subgraphs" in text

    d = hv.diff(part, forced)
    moved = d[(d.change == "backend") & (d.op == op)]  # every forced node moved (and its demoted neighbours)
    assert len(moved) == sum(g.ops.count(op) for g in cap.graphs) and set(moved.backend_b) == {"torch"}
    assert set(moved.graph) == {k for k, g in enumerate(cap.graphs) if op in g.ops}
    assert all(forced.backend_of(n) == "torch" for n in moved.node)

    sweep = hv.sweep(part, None, {"min_block_size": [1, 5, 100]}, progress=False)
    for r in sweep.itertuples():
        s = hv.partition(cap, min_block_size=r.min_block_size).stats
        assert (r.subgraphs, r.acc_subgraphs, r.graphs, r.graph_breaks, r.graphs_left_whole) == (
            s["subgraphs"], s["acc_subgraphs"], 7, 6, s["graphs_left_whole"])
    assert sweep.graphs_left_whole.iloc[-1] > sweep.graphs_left_whole.iloc[0]
