"""One graph-by-graph path: a MultiGraphPartition is a sequence of hv.Partitions plus the breaks,
and what each layer does graph by graph is its single-graph function applied to every graph
(hierviz.partitioner.by_graph.per_graph)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import pytest

import hierviz as hv
from hierviz.partitioner.by_graph.per_graph import partitions_of, per_graph, per_graph_table
from tests.dynamo_models import three_breaks


@pytest.fixture(scope="module")
def mp():
    model, inputs = three_breaks()
    return hv.partition(model, inputs, ir="torch_compile", min_block_size=2)


def test_a_multi_graph_partition_is_a_sequence_of_its_partitions(mp) -> None:
    assert isinstance(mp, Sequence)
    assert len(mp) == len(mp.graphs) >= 3
    assert list(mp) == mp.graphs
    assert all(isinstance(p, hv.Partition) for p in mp)
    assert mp[1:] == mp.graphs[1:]
    assert mp["g1"] is mp[1] is mp.graphs[1]
    assert partitions_of(mp) == mp.graphs


def test_breaks_after_each_graph(mp) -> None:
    assert [b for k in range(-1, len(mp)) for b in mp.breaks_after(k)] == sorted(mp.breaks,
                                                                                 key=lambda b: b.after_graph)
    assert all(b.after_graph == 0 for b in mp.breaks_after(0)) and mp.breaks_after(0)


def test_per_graph_is_the_single_graph_function_on_each_graph(mp) -> None:
    assert per_graph(lambda p: p.stats, mp) == [p.stats for p in mp.graphs]
    labels = [f"graph {k}" for k in range(len(mp))]
    assert per_graph(lambda p, label: (p.stats["subgraphs"], label), mp, labels) == \
        [(p.stats["subgraphs"], label) for p, label in zip(mp.graphs, labels)]
    one = mp.graphs[0]
    assert partitions_of(one) == [one]
    assert per_graph(lambda p: p.stats, one) == [one.stats]


def test_the_tables_are_each_graphs_table_with_its_graph(mp) -> None:
    table = per_graph_table(hv.Partition.summary, mp)
    for k, p in enumerate(mp.graphs):
        own = table[table["graph"] == k].drop(columns=["graph"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(own, p.summary().reset_index(drop=True))
    pd.testing.assert_frame_equal(mp.summary(), table)
    pd.testing.assert_frame_equal(mp.ops(), per_graph_table(hv.Partition.ops, mp))


def test_one_value_per_graph_or_a_clear_error(mp) -> None:
    with pytest.raises(hv.ConfigError, match=f"1 value\\(s\\) given for {len(mp)} graph"):
        per_graph(lambda p, x: x, mp, [0])


def test_an_error_names_its_graph(mp) -> None:
    def refuse(p: hv.Partition) -> None:
        if p is mp.graphs[1]:
            raise hv.ConfigError("cannot do this")

    with pytest.raises(hv.ConfigError, match="^graph g1: cannot do this$"):
        per_graph(refuse, mp, name_errors=True)
    with pytest.raises(hv.ConfigError, match="^cannot do this$"):
        per_graph(refuse, mp)
    with pytest.raises(hv.ConfigError, match="^cannot do this$"):
        per_graph(refuse, mp.graphs[1], name_errors=True)  # one graph: nothing to name


def test_the_saved_document_holds_each_graphs_own(mp) -> None:
    from hierviz.partitioner.saved.saved_graphs import document_graphs
    from hierviz.partitioner.saved.saved_partition import document

    doc = document_graphs(mp)
    assert [g["partition"] for g in doc["graphs"]] == [document(p) for p in mp.graphs]


def test_model_explorer_holds_each_graphs_own(mp) -> None:
    from hierviz.drawing.by_graph.graphs_export import to_model_explorer_graphs
    from hierviz.drawing.model_explorer import to_model_explorer

    graphs = to_model_explorer_graphs(mp)["graphs"]
    own = [g for k, p in enumerate(mp.graphs) for g in to_model_explorer(p)["graphs"]]
    assert [g["id"] for g in graphs] == [f"g{k} {g['id']}" for k, p in enumerate(mp.graphs)
                                         for g in to_model_explorer(p)["graphs"]]
    assert [g["nodes"] for g in graphs] == [g["nodes"] for g in own]


@pytest.mark.parametrize("view", ["full", "collapsed"])
def test_each_frame_of_the_picture_is_that_graphs_own_drawing(mp, view) -> None:
    from hierviz.drawing.dot import nest
    from hierviz.drawing.views import render

    source = mp.render(view).source
    at = 0
    for k, p in enumerate(mp.graphs):
        own = nest(list(render(p, view).body), f"g{k}_").lines
        assert own
        for line in own:  # every line of graph k's own drawing, in order, after those of the graphs before it
            at = source.index(line.strip(), at)
