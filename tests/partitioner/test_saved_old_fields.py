"""A saved partition written before hierviz kept `forced_from` (NodeTable.forced_from) or
`start_kind` (DynamoGraph.start_kind) lacks those fields (an old file is a new save with them
dropped: both were added as optional fields, format unchanged). Where the file's typed fields
settle them (the config's torch_executed_ops, each node's reason_code and op) they are inferred
on load; where they do not, the loaded partition says so once (`SavedPartition.old_fields`, a
note) instead of showing a source op's forcing as plain torch_executed_ops without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import hierviz as hv
from hierviz.partitioner.saved.old_field import OldField

A = "torch.ops.aten."


class SiluSoftmax(torch.nn.Module):
    """SiLU (lowered to sigmoid * x) and softmax.int (lowered to _softmax) after a Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.nn.functional.silu(self.fc(x)), dim=-1) + torch.relu(x)


@pytest.fixture(scope="module")
def graph() -> torch.fx.GraphModule:
    torch.manual_seed(0)
    return hv.capture(SiluSoftmax().eval(), (torch.randn(2, 8),))


def old_save(part, path: Path) -> Path:
    """`part` saved as a hierviz before NodeTable.forced_from wrote it: the same document without the field."""
    doc = json.loads(part.save(path).read_text())
    for node in doc["nodes"]:
        del node["forced_from"]
    path.write_text(json.dumps(doc))
    return path


def forced_notes(part) -> list[str]:
    return [n for n in part.notes if "forced_from" in n]


def test_one_source_op_is_inferred_from_the_config(graph, tmp_path) -> None:
    live = hv.partition(graph, torch_executed_ops=hv.source_ops("aten.silu.default") | {"aten.sigmoid.default"},
                        min_block_size=1)
    assert live.records.forced_from[live.records.position["mul"]] == A + "silu.default"
    assert live.records.forced_from[live.records.position["sigmoid"]] is None  # the plain entry forced it
    new = hv.load_partition(live.save(tmp_path / "new.json"))
    loaded = hv.load_partition(old_save(live, tmp_path / "old.json"))
    assert loaded.records.forced_from == live.records.forced_from
    assert loaded.old_fields == (OldField("forced_from", inferred=("sigmoid", "mul")),)
    assert len(forced_notes(loaded)) == 1 and "[excluded (forced from aten.silu)]" in loaded.report()
    rows, new_rows = loaded.blockers(), new.blockers()  # as the same partition saved today
    forced = rows[rows.kind == "forced"]
    assert list(forced.op) == list(new_rows[new_rows.kind == "forced"].op)
    assert list(forced.nodes) == list(new_rows[new_rows.kind == "forced"].nodes)
    assert A + "silu.default" in set(forced.op)


def test_two_source_ops_cannot_be_told_apart_and_the_partition_says_so_once(graph, tmp_path) -> None:
    live = hv.partition(graph, torch_executed_ops=hv.source_ops("aten.silu.default", "aten.softmax.int"),
                        min_block_size=1)
    loaded = hv.load_partition(old_save(live, tmp_path / "old.json"))
    assert loaded.old_fields == (OldField("forced_from", unknown=("sigmoid", "mul", "_softmax")),)
    assert loaded.records.forced_from == (None,) * len(live.records)
    (note,) = forced_notes(loaded)
    assert "sigmoid, mul, _softmax" in note and "hv.source_ops" in note
    assert loaded.report().count(note) == 1


def test_a_source_packet_does_not_name_the_overload_so_it_is_not_guessed(graph, tmp_path) -> None:
    live = hv.partition(graph, torch_executed_ops=hv.source_ops("aten.silu"), min_block_size=1)
    loaded = hv.load_partition(old_save(live, tmp_path / "old.json"))
    assert loaded.old_fields == (OldField("forced_from", unknown=("sigmoid", "mul")),)


def test_without_source_ops_an_old_file_loads_as_it_always_did(graph, tmp_path) -> None:
    live = hv.partition(graph, torch_executed_ops={"aten.relu.default"}, min_block_size=1)
    loaded = hv.load_partition(old_save(live, tmp_path / "old.json"))
    assert loaded.old_fields == () and forced_notes(loaded) == []
    assert loaded.records.forced_from == live.records.forced_from


def test_a_new_file_has_nothing_to_infer(graph, tmp_path) -> None:
    live = hv.partition(graph, torch_executed_ops=hv.source_ops("aten.silu.default", "aten.softmax.int"),
                        min_block_size=1)
    loaded = hv.load_partition(live.save(tmp_path / "new.json"))
    assert loaded.old_fields == () and forced_notes(loaded) == []
    assert loaded.records.forced_from == live.records.forced_from


@pytest.mark.slow  # torch.compile captures the model: seconds of CPU
def test_an_old_graph_by_graph_file_says_its_graph_starts_are_not_known(tmp_path) -> None:
    from tests.dynamo_models import load

    model, inputs = load("three_graphs")
    live = hv.partition(model, inputs, ir="torch_compile")
    assert [g.start_kind for g in live.capture.graphs] == ["", "resumed", "resumed"]
    doc = json.loads(live.save(tmp_path / "new.json").read_text())
    for g in doc["graphs"]:
        del g["start_kind"]
    (tmp_path / "old.json").write_text(json.dumps(doc))
    loaded = hv.load_partition(tmp_path / "old.json")
    assert loaded.old_fields == (OldField("start_kind", unknown=("g1", "g2")),)
    (note,) = [n for n in loaded.notes if "start_kind" in n]
    assert "g1, g2" in note and loaded.report().count(note) == 1
    again = hv.load_partition(tmp_path / "new.json")
    assert again.old_fields == () and not [n for n in again.notes if "start_kind" in n]
