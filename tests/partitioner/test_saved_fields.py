"""A saved partition is checked field by field when it is loaded: any field given a value of another
kind, or a name that points nowhere, is one SavedPartitionError naming the field; a file that loads
renders and reports (nothing after the load meets a wrong type)."""

from __future__ import annotations

import json

import pytest

import hierviz as hv

JUNK = (None, 3, -1, 1.5, "3", True, [], {}, ["x", "y"], {"a": 1})
AGREEMENT = ("where the file holds", "is not a subgraph of the file", "which is not a node of the file",
             "which is not an earlier node", "is used twice")


@pytest.fixture(scope="module")
def saved_doc(tmp_path_factory):
    import torch
    from tests.partitioner.test_blockers import Blocked

    part = hv.partition(hv.capture(Blocked(), (torch.randn(2, 8),)), min_block_size=3)
    path = part.save(tmp_path_factory.mktemp("saved") / "p.json")
    return json.loads(path.read_text())


def _with(doc: dict, path: tuple, value) -> dict:
    doc = json.loads(json.dumps(doc))
    *parents, last = path
    holder = doc
    for key in parents:
        holder = holder[key]
    holder[last] = value
    return doc


def _field_paths(doc: dict) -> list[tuple]:
    """Every field the loaded partition reads: the top level's, stats', and those of the first
    subgraph with boundary tensors, its first input and of one node of every kind."""
    paths: list[tuple] = [(k,) for k in doc if k not in ("format", "colors")]
    paths += [("stats", k) for k in doc["stats"]]
    k = next(i for i, s in enumerate(doc["subgraphs"]) if s["inputs"])
    paths += [("subgraphs", k, f) for f in doc["subgraphs"][k]]
    paths += [("subgraphs", k, "inputs", 0, f) for f in doc["subgraphs"][k]["inputs"][0]]
    kinds: dict[str, int] = {}
    for i, node in enumerate(doc["nodes"]):
        kinds.setdefault(node["kind"] + str(node["demoted"] is None), i)
    paths += [("nodes", i, f) for i in kinds.values() for f in doc["nodes"][i]]
    return paths


def _load(tmp_path, doc: dict):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    return hv.load_partition(path)


def test_a_count_given_as_text_is_refused_at_load(saved_doc, tmp_path) -> None:
    with pytest.raises(hv.SavedPartitionError) as info:
        _load(tmp_path, _with(saved_doc, ("stats", "subgraphs"), "3"))
    assert str(info.value) == (f"{str(tmp_path / 'x.json')!r} is a damaged saved partition: stats.subgraphs is '3', "
                               "not a whole number; save the partition again (part.save('x.json')).")


@pytest.mark.slow  # 1,250 single-field edits (125 fields x 10 values), each rendered and reported when it loads
def test_every_field_of_another_kind_is_refused_or_harmless(saved_doc, tmp_path) -> None:
    refused = 0
    for path in _field_paths(saved_doc):
        named = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in path).replace(".[", "[")
        for value in JUNK:
            doc = _with(saved_doc, path, value)
            try:
                part = _load(tmp_path, doc)
            except hv.SavedPartitionError as exc:
                refused += 1
                assert "\n" not in str(exc) and "save the partition again" in str(exc), (path, value, str(exc))
                # or a value of the right kind that another field, referring to it, no longer agrees with
                elsewhere = any(words in str(exc) for words in AGREEMENT)
                assert named in str(exc) or elsewhere or path[0] == "config", (path, value, exc)
                continue
            part.render("full")  # a file that loads renders and reports: no TypeError / ValueError after the load
            part.report()
            hv.check(part)
    assert refused > 1000  # 1,114 of the 1,250 today


@pytest.mark.parametrize("edit, says", [
    (lambda d: d["nodes"][-1].__setitem__("tag", "_run_on_acc_tensorrt_99"),
     "nodes[{last}].tag '_run_on_acc_tensorrt_99' is not a subgraph of the file"),
    (lambda d: d["nodes"][3]["inputs"].append("nowhere"),
     "nodes[3].inputs names 'nowhere', which is not an earlier node"),
    (lambda d: d["subgraphs"][0]["nodes"].append("nowhere"),
     "subgraphs[0].nodes names 'nowhere', which is not a node of the file"),
    (lambda d: d["nodes"][1].__setitem__("name", d["nodes"][0]["name"]), "nodes[1].name"),
    (lambda d: d["stats"].__setitem__("subgraphs", d["stats"]["subgraphs"] + 1), "stats.subgraphs says"),
    (lambda d: d["nodes"][2].__setitem__("reason_code", "because"), "nodes[2].reason_code is 'because', not a reason"),
])
def test_names_that_point_nowhere_and_counts_that_disagree_are_refused(saved_doc, tmp_path, edit, says) -> None:
    doc = json.loads(json.dumps(saved_doc))
    edit(doc)
    with pytest.raises(hv.SavedPartitionError) as info:
        _load(tmp_path, doc)
    assert says.format(last=len(doc["nodes"]) - 1) in str(info.value)


def test_op_names_in_a_saved_partition_import_nothing(saved_doc, tmp_path, monkeypatch) -> None:
    """A name read from a file is never looked up by importing its module (importing runs the
    module's code): a saved partition may come from someone else."""
    marker = tmp_path / "imported"
    (tmp_path / "markermod.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\nop = print\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    doc = json.loads(json.dumps(saved_doc))
    doc["config"]["torch_executed_ops"] = ["markermod.op"]
    blocked = next(n for n in doc["nodes"] if n["kind"] == "call_function" and n["backend"] == "torch")
    blocked["op"] = "markermod.op"
    part = _load(tmp_path, doc)
    part.report()
    part.blockers()
    assert "markermod.op" in part.config.torch_executed_ops
    assert not marker.exists()
