"""hv.check and hv.diff on MultiGraphPartitions (ir="torch_compile"): limits over the totals with
graph breaks among the top blockers; graphs compared by position, with a `graph` column."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from tests.dynamo_models import NoBreak, ThreeBreaks, break_line, three_breaks

RELU = "torch.ops.aten.relu.default"


@pytest.fixture(scope="module")
def cap():
    model, inputs = three_breaks()
    return hv.capture(model, inputs, ir="torch_compile")


@pytest.fixture(scope="module")
def plain():
    model, inputs = three_breaks(breaks=False)  # without the print: 3 graphs, 2 breaks
    return hv.capture(model, inputs, ir="torch_compile")


def test_check_passes_within_the_totals(cap) -> None:
    part = hv.partition(cap, min_block_size=3)
    s = part.stats
    assert s["subgraphs"] == 4  # one per graph
    assert hv.check(part, max_subgraphs=s["subgraphs"], min_coverage=s["coverage"],
                    max_subgraphs_by_backend={"tensorrt": s["subgraphs_by_backend"]["tensorrt"]},
                    max_boundary_tensors=s["boundary_tensors"]) is None
    hv.check(part, like=part)


def test_a_backend_limit_of_none_is_no_limit(cap) -> None:
    """max_subgraphs_by_backend={"tensorrt": None} limits nothing, as max_subgraphs=None (it was a TypeError)."""
    part = hv.partition(cap, min_block_size=3)
    assert part.stats["subgraphs_by_backend"]["tensorrt"] > 0
    assert hv.check(part, max_subgraphs_by_backend={"tensorrt": None}) is None
    with pytest.raises(hv.PartitionCheckError, match=r"1 limit\(s\) broken"):
        hv.check(part, max_subgraphs_by_backend={"tensorrt": None, "torch": 0})


def test_check_names_each_broken_total_and_the_breaks_among_the_top_blockers(cap) -> None:
    part = hv.partition(cap, min_block_size=3, torch_executed_ops={RELU})
    s = part.stats
    with pytest.raises(hv.PartitionCheckError) as info:
        hv.check(part, max_subgraphs=s["subgraphs"] - 1, max_subgraphs_by_backend={"torch": 0},
                 min_coverage=1.0)
    text = str(info.value)
    assert "4 graphs, 3 graph breaks" in text and "3 limit(s) broken" in text
    assert f"subgraphs {s['subgraphs']} > max_subgraphs {s['subgraphs'] - 1}" in text
    assert f"torch subgraphs {s['subgraphs_by_backend']['torch']} > max_subgraphs_by_backend['torch'] 0" in text
    assert f"coverage {s['coverage']:.2%} < min_coverage 100.00%" in text
    top = text[text.index("top blockers"):].splitlines()[1:]
    table = part.blockers(top=0)
    assert len(top) == 3
    for line, row in zip(top, table.head(3).itertuples()):
        assert line.strip().startswith(f"[{row.graph}] {row.kind}: {row.op}")
        assert f"{row.subgraphs_saved} subgraph(s) fewer" in line or f"{-row.subgraphs_saved} subgraph(s) more" in line
    assert any("graph break: " in line and f"dynamo_models.py:{break_line(ThreeBreaks, 'if')}" in line
               for line in top)


def test_check_like_a_better_partition_fails_each_worse_total(cap) -> None:
    good = hv.partition(cap, min_block_size=3)
    worse = hv.partition(cap, min_block_size=3, torch_executed_ops={RELU})
    with pytest.raises(hv.PartitionCheckError) as info:
        hv.check(worse, like=good)
    text = str(info.value)
    assert f"subgraphs {worse.stats['subgraphs']} vs {good.stats['subgraphs']} saved" in text
    assert "graph breaks 3 vs" not in text  # the same breaks: that limit holds
    assert "3 limit(s) broken" in text and "boundary tensors" in text and "coverage" in text


def test_check_like_a_model_with_fewer_breaks(cap, plain) -> None:
    fewer = hv.partition(plain, min_block_size=3)
    more = hv.partition(cap, min_block_size=3)
    with pytest.raises(hv.PartitionCheckError, match="graph breaks 3 vs 2 saved"):
        hv.check(more, like=fewer)
    hv.check(fewer, like=more)


def test_check_refuses_bad_limits_on_a_multi_graph_partition(cap) -> None:
    part = hv.partition(cap, min_block_size=3)
    with pytest.raises(hv.ConfigError, match="not a backend of this partition"):
        hv.check(part, max_subgraphs_by_backend={"tensorrrt": 1})
    with pytest.raises(hv.ConfigError, match="hv.MultiGraphPartition"):
        hv.check(cap)


def test_diff_matches_graphs_by_position(cap) -> None:
    a = hv.partition(cap, min_block_size=3)
    b = hv.partition(cap, min_block_size=3, torch_executed_ops={RELU})
    assert hv.diff(a, a).empty
    d = hv.diff(a, b)
    assert list(d.columns[:3]) == ["graph", "node", "op"]
    relus = a.nodes()[a.nodes().op == RELU]
    moved = d[(d.change == "backend") & (d.op == RELU)]
    assert sorted(moved.node) == sorted(relus.name)  # every relu, named across graphs
    assert set(moved.backend_a) == {"tensorrt"} and set(moved.backend_b) == {"torch"}
    for r in d.itertuples():  # each row is its graph's own diff, graph k against graph k
        assert r.node.startswith(f"g{r.graph}/")
        assert b.backend_of(r.node) == r.backend_b and a.backend_of(r.node) == r.backend_a
    for k in range(len(a.graphs)):
        mine = d[d.graph == k]
        alone = hv.diff(a.graphs[k], b.graphs[k])
        assert sorted(n.split("/", 1)[1] for n in mine.node) == sorted(alone.node)


def test_diff_of_models_with_different_graphs(cap, plain) -> None:
    fewer = hv.partition(plain, min_block_size=3)
    a = hv.partition(cap, min_block_size=3)
    d = hv.diff(a, fewer)
    assert set(d[d.graph == 3].change) == {"only_a"}  # graph 3 only in a: all its op nodes
    assert len(d[d.graph == 3]) == len(cap.graphs[3].ops)


def test_diff_multi_against_single(cap) -> None:
    a = hv.partition(cap, min_block_size=3)
    with pytest.raises(hv.ConfigError, match="MultiGraphPartition of 4 graphs"):
        hv.diff(a, a.graphs[0])
    torch.manual_seed(0)
    model = NoBreak().eval()
    one = hv.partition(model, (torch.randn(2, 4),), ir="torch_compile", min_block_size=1)
    assert len(one.graphs) == 1
    same = hv.partition(one.graphs[0].graph, min_block_size=1)  # that graph, as a single Partition
    assert hv.diff(one, same).empty and hv.diff(same, one).empty
    forced = hv.partition(one.graphs[0].graph, min_block_size=1, torch_executed_ops={RELU})
    d = hv.diff(one, forced)
    assert "graph" not in d.columns and list(d[d.change == "backend"].op) == [RELU]


def test_saved_multi_graph_partitions_check_diff_and_blockers(cap, plain, tmp_path) -> None:
    fewer = hv.partition(plain, min_block_size=3)
    more = hv.partition(cap, min_block_size=3)
    path = fewer.save(tmp_path / "fewer.json")
    with pytest.raises(hv.PartitionCheckError, match="graph breaks 3 vs 2 saved"):
        hv.check(more, like=path)
    hv.check(fewer, like=str(path))
    loaded = hv.load_partition(path)
    assert hv.diff(loaded, fewer).empty
    d = hv.diff(more, loaded)
    assert len(d) and set(d.graph) <= {0, 1, 2, 3}
    live, kept = fewer.blockers(), loaded.blockers()
    assert list(kept.columns) == list(live.columns)
    assert sorted(kept.change) == sorted(live[live.kind != "combined"].change)
    assert kept.subgraphs_saved.isna().all() and kept.note.str.contains("saved partition").all()
