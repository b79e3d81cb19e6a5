"""hv.partition(..., ir="torch_compile"): one Partition per dynamo graph in execution order,
with every engine; totals, the report with breaks and source lines, tables with a `graph`
column, nodes named across graphs, graphs left whole in PyTorch, graphs with nothing to
partition, and clear errors."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import trt
from tests.dynamo_models import DetachOnly, Prints, break_line, load

ENGINES = ["hierviz", "fast", "global", "torch_tensorrt"] if trt.available() else ["hierviz"]


@pytest.fixture(scope="module")
def prints():
    model, inputs = load("prints")
    return model, inputs, hv.capture(model, inputs, ir="torch_compile")


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_partitions_every_graph(prints, engine) -> None:
    model, inputs, cap = prints
    p = hv.partition(model, inputs, ir="torch_compile", engine=engine, min_block_size=2)
    assert isinstance(p, hv.MultiGraphPartition)
    assert p.capture is cap  # taken from memory: re-partitioning does not capture again
    assert [type(g) for g in p.graphs] == [hv.Partition, hv.Partition]
    assert [g.graph for g in p.graphs] == [g.graph for g in cap.graphs]
    assert all(g.engine == engine for g in p.graphs)
    s = p.stats
    assert (s["graphs"], s["graph_breaks"], s["graphs_left_whole"]) == (2, 1, 0)
    assert s["subgraphs"] == sum(g.stats["subgraphs"] for g in p.graphs)
    assert s["compute_ops"] == sum(len([o for o in g.ops if o != "_operator.getitem"]) for g in cap.graphs)
    assert sum(s["subgraphs_by_backend"].values()) == s["subgraphs"]
    # each graph's split module gives its graph's outputs on the values of its first call
    for part, g in zip(p.graphs, cap.graphs):
        with torch.no_grad():
            torch.testing.assert_close(part.module(*g.example_inputs), g.graph(*g.example_inputs))


def test_report_shows_each_graph_the_break_and_totals(prints) -> None:
    model, inputs, cap = prints
    p = hv.partition(cap, min_block_size=2)
    text = p.report()
    line = break_line(Prints, "print")
    assert text.count("Dry-Run Results for Graph") == 2
    assert text.index("Graph g0 of 2") < text.index(f"dynamo_models.py:{line}") < text.index("Graph g1 of 2")
    assert "Failed to trace builtin operator" in text and "Hint: " in text
    assert 'print("hidden", tuple(h.shape))' in text  # the user's line itself
    totals = text[text.index("Totals over 2 graph(s)"):]
    assert "Graph breaks: 1" in totals and f"after g0: {cap.breaks[0].file}:{line}" in totals
    by = p.stats["subgraphs_by_backend"]
    assert (f"Subgraphs: {p.stats['subgraphs']} "
            f"(tensorrt={by['tensorrt']}, inductor={by['inductor']}, torch={by['torch']})") in totals
    assert "Graphs left whole in PyTorch (fewer than min_block_size supported ops): 0" in totals


def test_graphs_below_min_block_size_are_left_whole(prints) -> None:
    _, _, cap = prints
    small = hv.partition(cap, min_block_size=1)
    big = hv.partition(cap, min_block_size=10_000)
    assert small.stats["graphs_left_whole"] == 0 and small.stats["acc_subgraphs"] >= 2
    assert big.stats["graphs_left_whole"] == 2 and big.stats["acc_subgraphs"] == 0
    assert "Left whole in PyTorch" in big.report()
    assert "fewer than min_block_size supported ops): 2 (g0, g1)" in big.report()


def test_tables_have_a_graph_column_and_names_across_graphs(prints) -> None:
    _, _, cap = prints
    p = hv.partition(cap, min_block_size=2)
    nodes = p.nodes()
    assert list(nodes.columns[:3]) == ["graph", "name", "node"]
    assert nodes.name.is_unique  # two graphs both have arg0_1: qualified names differ
    for k, g in enumerate(p.graphs):
        mine = nodes[nodes.graph == k]
        assert list(mine.node) == list(g.nodes().name)
        assert all(n.startswith(f"g{k}/") for n in mine.name)
    ops = p.ops()
    assert list(ops.columns[:2]) == ["graph", "op"] and set(ops.graph) == {0, 1}
    assert ops["count"].sum() == sum(g.ops()["count"].sum() for g in p.graphs)
    summary = p.summary()
    assert summary.columns[0] == "graph" and len(summary) == p.stats["subgraphs"]


def test_reason_of_takes_both_forms_of_a_name(prints) -> None:
    _, _, cap = prints
    p = hv.partition(cap, min_block_size=2)
    node = next(n for n in p.graphs[1].nodes().itertuples() if n.kind == "call_function").name
    assert p.reason_of(f"g1/{node}") == p.reason_of((1, node)) == p.graphs[1].reason_of(node)
    assert p.backend_of(f"g1/{node}") == p.graphs[1].backend_of(node)
    with pytest.raises(hv.ConfigError, match="g<graph>/<name>"):
        p.reason_of(node)  # bare name: which graph?
    with pytest.raises(hv.ConfigError, match="2 graph"):
        p.reason_of(f"g7/{node}")
    with pytest.raises(hv.ConfigError, match="no node named"):
        p.reason_of("g0/not_a_node")


def test_a_graph_with_nothing_to_partition_is_reported_not_an_error() -> None:
    p = hv.partition(DetachOnly(), (torch.randn(2, 4),), ir="torch_compile", min_block_size=1)
    assert p.stats["graphs_without_compute"] == 1 and p.stats["graphs"] == 2
    assert not p.has_compute(0) and p.graphs[0].stats["subgraphs"] == 0
    assert "Nothing to partition" in p.report()
    assert "Graphs with nothing to partition (no compute): 1" in p.report()
    assert "2 graphs" in repr(p) and "DetachOnly" in p._repr_html_()


def test_require_full_compilation_is_off_as_in_torch_compile(prints) -> None:
    _, _, cap = prints
    p = hv.partition(cap, min_block_size=2, require_full_compilation=True, priority=("tensorrt",))
    assert not p.config.require_full_compilation
    assert "require_full_compilation has no effect" in p.report()


def test_wrong_ir_is_a_config_error(prints) -> None:
    model, inputs, _ = prints
    with pytest.raises(hv.ConfigError, match="'dynamo'.*'torch_compile'"):
        hv.partition(model, inputs, ir="compile")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fasterrcnn_mobilenet_v3_large_320_fpn", "ssdlite320_mobilenet_v3_large"])
def test_detection_models_graph_by_graph(detection, name) -> None:
    """The models torch.export rejects: every graph partitioned, the breaks at torchvision's
    post-processing lines, and the graphs' split modules giving the model's boxes."""
    model, inputs = detection.load(name)
    cap = detection.capture(name)
    with torch.no_grad():
        boxes = model(*inputs)[0]["boxes"]
    p = hv.partition(cap)
    assert len(p.graphs) == len(cap.graphs) > 5 and p.stats["graph_breaks"] == len(cap.breaks) > 3
    assert {b.gb_type for b in cap.breaks} & {"Dynamic shape operator", "Data-dependent branching"}
    assert all("torchvision" in b.file and b.line > 0 and b.code for b in cap.breaks)
    text = p.report()
    first = cap.breaks[0]
    assert f"{first.file}:{first.line}" in text and first.code in text
    assert p.stats["accelerated_ops"] > 100
    outputs = []
    for part, g in zip(p.graphs, cap.graphs):
        with torch.no_grad():
            got, want = part.module(*g.example_inputs), g.graph(*g.example_inputs)
        torch.testing.assert_close(got, want)
        outputs += [t for t in torch.utils._pytree.tree_leaves(got) if isinstance(t, torch.Tensor)]
    assert any(t.shape == boxes.shape and torch.allclose(t, boxes) for t in outputs)  # the model's own boxes


def test_a_multi_graph_partition_is_not_constructed_directly() -> None:
    """Its constructor is private (API.md): calling it says where one comes from."""
    with pytest.raises(hv.ConfigError, match=r"made by hv.partition\(model, example_inputs, ir='torch_compile'\)"):
        hv.MultiGraphPartition(None, [], hv.Config())


class _TwinGraphs(torch.nn.Module):
    """Two dynamo graphs alike (the same ops on the same shapes), split by a graph break."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.relu() + 1
        torch._dynamo.graph_break()
        return x.relu() + 1


def test_graphs_partitioned_alike_each_say_which_graph_they_are_and_the_shared_partition_is_untouched() -> None:
    """hv.sweep's cache hands the same Partition to graphs alike: each graph of the
    MultiGraphPartition still names itself (its build() answers for that graph), and the shared
    one, which other sweeps' rows read, is not changed."""
    from hierviz.partitioner.by_graph.multi_graph import partition_graphs

    mp = hv.partition(_TwinGraphs().eval(), (torch.randn(2, 8),), ir="torch_compile", min_block_size=1)
    assert len(mp.graphs) == 2
    shared: dict[str, hv.Partition] = {}

    def run(graph: torch.fx.GraphModule, config: hv.Config) -> hv.Partition:
        return shared.setdefault("part", hv.partition(graph, config=config))

    again = partition_graphs(mp.capture, mp.config, run=run)
    assert [p.dynamo_graph[0] for p in again.graphs] == ["g0", "g1"]
    assert [p.stats["subgraphs"] for p in again.graphs] == [p.stats["subgraphs"] for p in mp.graphs]
    assert shared["part"].dynamo_graph is None and shared["part"].backend_failed == ""
