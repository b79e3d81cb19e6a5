"""Saved partitions: part.save("x.json") and hv.load_partition round-trip to an empty diff;
a loaded partition reports, renders, checks and diffs, and refuses compiling in one error;
hv.diff matches by node name across two versions of a model; files that are not saved
partitions (or from a newer format) are one-line errors."""

from __future__ import annotations

import json

import pytest
import torch

import hierviz as hv
from tests.partitioner.test_blockers import Blocked


@pytest.mark.parametrize("name, cfg", [("efficientnet_b0", {"torch_executed_ops": {"aten.add.Tensor"}}),
                                       ("bert", {"min_block_size": 30})])
def test_round_trip_gives_an_empty_diff(zoo_cache, tmp_path, name, cfg) -> None:
    part = hv.partition(zoo_cache.capture(name), **cfg)
    loaded = hv.load_partition(part.save(tmp_path / "p.json"))
    assert hv.diff(part, loaded).empty and hv.diff(loaded, part).empty
    assert loaded.stats == part.stats and loaded.config == part.config and loaded.engine == part.engine
    assert [sg.nodes for sg in loaded.subgraphs] == [sg.nodes for sg in part.subgraphs]
    assert loaded.nodes().equals(part.nodes())
    assert loaded.report(what_to_change=False) == part.report(what_to_change=False)
    if not part.blockers().empty:  # a saved partition cannot re-partition: its causes keep their counts
        assert "not re-partitioned (a saved partition: counts only, no graph to re-partition)" in loaded.report()
    assert loaded.versions["torch"] == torch.__version__ and loaded.versions["hierviz"] == hv.__version__


def test_a_loaded_partition_renders_checks_and_refuses_compiling(graph, tmp_path) -> None:
    part = hv.partition(graph, min_block_size=3)
    loaded = hv.load_partition(part.save(tmp_path / "p.json"))
    assert loaded.render("full").source == part.render("full").source
    hv.check(loaded, max_subgraphs=part.stats["subgraphs"])
    html = loaded.save(tmp_path / "p.html").read_text()
    assert "hierviz partition report" in html and "a partition saved to" in html
    what = html[html.index('id="what-to-change"'):html.index('id="config"')]
    assert "<td>None</td>" not in what and "counted from a saved partition" in what
    assert "each figure from re-partitioning" not in what
    for call in (loaded.compile, lambda: loaded.module, lambda: hv.measure(loaded, (torch.randn(2, 8),))):
        with pytest.raises(hv.SavedPartitionError, match="needs the model's graph") as err:
            call()
        assert "\n" not in str(err.value)
    table = loaded.blockers()
    assert set(table.op) == set(part.blockers(top=0).op)
    assert table.subgraphs_if_fixed.isna().all() and table.note.str.contains("counts only").all()


class Edited(Blocked):
    """The same model after an edit: the second hypot became a mul."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        y = torch.hypot(h, x)
        y = torch.nn.functional.silu(self.b(y)) * 2 + 1
        z = torch.copysign(y, h)
        z = torch.tanh(z) + z * y
        return torch.sigmoid(self.c(z)).sum(-1)


def test_diff_matches_by_name_across_a_model_edit(graph, tmp_path) -> None:
    before = hv.load_partition(hv.partition(graph, min_block_size=3).save(tmp_path / "before.json"))
    after = hv.partition(hv.capture(Edited(), (torch.randn(2, 8),)), min_block_size=3)
    d = hv.diff(before, after)
    assert list(d.loc[d.change == "only_a", "op"]) == ["torch.ops.aten.hypot.default"]
    assert list(d.loc[d.change == "only_b", "op"]) == ["torch.ops.aten.mul.Tensor"]
    assert after.stats["coverage"] > before.stats["coverage"]
    assert after.stats["boundary_tensors"] < before.stats["boundary_tensors"]
    # each side drawn against the other marks the node the other lacks
    assert "not in b" in before.render("full", against=after).source
    assert "not in b" in after.render("full", against=before).source
    assert "not in b" not in after.render("full", against=after).source


@pytest.mark.parametrize("content, words", [
    ("not json", "is not a saved partition (JSONDecodeError"),
    ('{"a": 1}', "is not a saved partition (no \"format\""),
    ('{"format": "hierviz-partition/99", "hierviz_version": "9.0"}',
     "saved by a newer hierviz (9.0, format hierviz-partition/99)"),
    ('{"format": "hierviz-partition/1"}', "is format 1"),
])
def test_files_that_are_not_saved_partitions(tmp_path, content, words) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(hv.SavedPartitionError) as err:
        hv.load_partition(path)
    assert words in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(hv.SavedPartitionError, match="no file"):
        hv.load_partition(tmp_path / "missing.json")


@pytest.mark.parametrize("damage", [
    lambda d: d.__setitem__("stats", [1]),  # stats of the wrong kind
    lambda d: d["subgraphs"][0].pop("inputs"),  # a subgraph's boundary missing
    lambda d: next(n for n in d["nodes"] if n["kind"] != "placeholder").__setitem__("demoted", 5),
])
def test_a_damaged_saved_partition_is_a_saved_partition_error(graph, tmp_path, damage) -> None:
    doc = json.loads(hv.partition(graph).save(tmp_path / "p.json").read_text())
    damage(doc)
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(hv.SavedPartitionError, match="is a damaged saved partition") as err:
        part = hv.load_partition(path)
        part.report()
        part.summary()
    assert "\n" not in str(err.value)


def test_the_saved_document_is_versioned(graph, tmp_path) -> None:
    doc = json.loads(hv.partition(graph).save(tmp_path / "p.json").read_text())
    assert doc["format"] == "hierviz-partition/2"
    assert set(doc["versions"]) == {"torch", "torch_tensorrt", "hierviz"}
