"""The Model Explorer export: a graph collection in the format of Model Explorer's
graph_builder.py (checked field by field against the installed package's dataclasses)."""

from __future__ import annotations

import dataclasses
import json

import pytest

import hierviz as hv
from hierviz.drawing import palette
from hierviz.drawing.model_explorer import node_data_path, to_model_explorer

from .stack_models import captured, odd_fc2_partition, odd_partition
from .test_cost_overlay import fake_measurement

gb = pytest.importorskip("model_explorer.graph_builder", reason="pip install hierviz[model-explorer]")
ndb = pytest.importorskip("model_explorer.node_data_builder")


def fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def required(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}


def check(obj: dict, cls: type) -> None:
    assert set(obj) <= fields(cls), f"{cls.__name__}: unknown keys {set(obj) - fields(cls)}"
    assert required(cls) <= set(obj), f"{cls.__name__}: missing {required(cls) - set(obj)}"


@pytest.fixture(scope="module")
def odd() -> hv.Partition:
    return odd_partition(captured())


def test_document_follows_graph_builder(odd, tmp_path):
    path = odd.save(tmp_path / "part.json", format="model_explorer")
    doc = json.loads(path.read_text())
    check(doc, gb.GraphCollection)
    assert [g["id"] for g in doc["graphs"]] == ["modules", "subgraphs"]
    for graph in doc["graphs"]:
        check(graph, gb.Graph)
        ids = [n["id"] for n in graph["nodes"]]
        assert len(ids) == len(set(ids))
        for node in graph["nodes"]:
            check(node, gb.GraphNode)
            check(node["style"], gb.GraphNodeStyle)
            for kv in node["attrs"]:
                check(kv, gb.KeyValue)
                assert isinstance(kv["value"], str)
            for edge in node["incomingEdges"]:
                check(edge, gb.IncomingEdge)
                assert edge["sourceNodeId"] in ids
            for item in node["outputsMetadata"]:
                check(item, gb.MetadataItem)
        for cfg in graph.get("groupNodeConfigs", []):
            check(cfg, gb.GroupNodeConfig)


def test_nodes_carry_backend_tag_reason_module_and_color(odd):
    doc = to_model_explorer(odd)
    nodes = {n["id"]: n for n in doc["graphs"][0]["nodes"]}
    weights = [n.name for n in odd.graph.graph.nodes if n.op == "get_attr"]
    assert len(nodes) == len(list(odd.graph.graph.nodes)) - len(weights)
    relu = nodes["relu_2"]  # blocks.2's relu, the one that runs in PyTorch
    attrs = {kv["key"]: kv["value"] for kv in relu["attrs"]}
    assert attrs["backend"] == "torch" and attrs["tag"] == odd.tag_of("relu_2")
    assert attrs["op"] == "torch.ops.aten.relu.default" and attrs["reason"] == odd.reason_of("relu_2")
    assert attrs["module"] == "blocks.2" and attrs["module_class"] == "Block"
    assert relu["namespace"] == "Block_2" and relu["style"]["backgroundColor"] == palette.fill("torch")
    fc1 = nodes["linear_5"]  # blocks.2.fc1
    assert fc1["namespace"] == "Block_2/Linear_fc1"
    sub = {n["id"]: n for n in doc["graphs"][1]["nodes"]}
    assert sub["relu_2"]["namespace"] == f"{odd.tag_of('relu_2')}/Block_2"
    assert nodes["x"]["namespace"] == "inputs"


def test_measured_latency_goes_into_attrs_and_node_data(odd, tmp_path):
    m = fake_measurement(odd, [1.0, 0.25, 2.75])
    path = odd.save(tmp_path / "part.json", format="model_explorer", measurement=m)
    data = json.loads(node_data_path(path).read_text())
    assert set(data) == {"modules", "subgraphs"}
    one = data["modules"]
    check(one, ndb.GraphNodeData)
    for r in one["results"].values():
        check(r, ndb.NodeDataResult)
    for sg, ms in zip(odd.subgraphs, [1.0, 0.25, 2.75]):
        assert sum(one["results"][n]["value"] for n in sg.nodes) == pytest.approx(ms, rel=1e-3)
    doc = json.loads(path.read_text())
    relu = next(n for n in doc["graphs"][0]["nodes"] if n["id"] == "relu_2")
    assert {"key": "subgraph_ms", "value": "0.2500"} in relu["attrs"]


def test_same_file_twice(odd, tmp_path):
    a = odd.save(tmp_path / "a.json", format="model_explorer").read_bytes()
    assert a == odd.save(tmp_path / "b.json", format="model_explorer").read_bytes()


def test_unknown_format_is_refused(odd, tmp_path):
    with pytest.raises(hv.RenderError, match="model_explorer"):
        odd.save(tmp_path / "a.json", format="modelexplorer")


def test_against_goes_into_attrs_and_node_data(odd, tmp_path):
    """against= in the Model Explorer export (the same overlay the diff diagram draws): each
    changed node says how and where it runs in the other partition; part.diff.json gives 2 to a
    backend change, 1 to a regrouped node, 0 to the rest."""
    other = odd_fc2_partition(odd.graph)
    path = odd.save(tmp_path / "part.json", format="model_explorer", against=other)
    data = json.loads(node_data_path(path, ".diff.json").read_text())
    check(data["modules"], ndb.GraphNodeData)
    values = {name: r["value"] for name, r in data["modules"]["results"].items()}
    rows = hv.diff(odd, other)
    assert rows.shape[0] > 0
    for name, change in zip(rows["node"], rows["change"]):
        assert values[name] == (2.0 if change == "backend" else 1.0)
    assert sum(1 for v in values.values() if v) == rows.shape[0]
    doc = json.loads(path.read_text())
    moved = rows[rows["change"] == "backend"].iloc[0]
    node = next(n for n in doc["graphs"][0]["nodes"] if n["id"] == moved["node"])
    assert {"key": "against_change", "value": "backend"} in node["attrs"]
    assert {"key": "against_backend", "value": other.backend_of(moved["node"])} in node["attrs"]
