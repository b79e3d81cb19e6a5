"""hv.check: passes quietly within the limits; otherwise one PartitionCheckError (also an
AssertionError) listing every broken limit with its figure and the top blockers; like= a saved
partition; wrong limits are one-line ConfigErrors."""

from __future__ import annotations

import pytest

import hierviz as hv


def test_within_limits_returns_quietly(graph) -> None:
    part = hv.partition(graph, min_block_size=3)
    s = part.stats
    assert hv.check(part, max_subgraphs=s["subgraphs"], min_coverage=s["coverage"],
                    max_boundary_tensors=s["boundary_tensors"],
                    max_subgraphs_by_backend={"tensorrt": s["subgraphs_by_backend"]["tensorrt"]}) is None


def test_every_broken_limit_is_listed_with_its_figure_and_the_top_blockers(graph) -> None:
    part = hv.partition(graph, min_block_size=3)
    s = part.stats
    with pytest.raises(hv.PartitionCheckError) as err:
        hv.check(part, max_subgraphs=1, min_coverage=1.0, max_boundary_tensors=s["boundary_tensors"],
                 max_subgraphs_by_backend={"torch": 0})
    text = str(err.value)
    assert isinstance(err.value, AssertionError) and isinstance(err.value, hv.HiervizError)
    assert f"subgraphs {s['subgraphs']} > max_subgraphs 1" in text
    assert f"coverage {s['coverage']:.2%} < min_coverage 100.00%" in text
    assert f"torch subgraphs {s['subgraphs_by_backend']['torch']} > max_subgraphs_by_backend['torch'] 0" in text
    assert "3 limit(s) broken" in text and "boundary" not in text.split("top blockers")[0]
    top = part.blockers(top=0).head(3)
    blockers = text.split("top blockers (part.blockers() for all):\n")[1].splitlines()
    assert len(blockers) == 3
    for line, row in zip(blockers, top.itertuples()):
        fewer = (f"{row.subgraphs_saved} subgraph(s) fewer" if row.subgraphs_saved >= 0
                 else f"{-row.subgraphs_saved} subgraph(s) more")
        assert line.strip() == (f"{row.kind}: {row.op} ({row.nodes} node(s)); {row.change}: {fewer} "
                                f"({row.subgraphs_if_fixed} in all), {row.accelerated_ops_gained} more op(s) "
                                f"accelerated [{row.verdict}]")


def test_like_a_saved_partition(graph, tmp_path) -> None:
    good = hv.partition(graph, min_block_size=3)
    path = good.save(tmp_path / "good.json")
    hv.check(good, like=path)
    hv.check(good, like=hv.load_partition(path))
    worse = hv.partition(graph, min_block_size=2, torch_executed_ops={"aten.tanh.default"})
    assert worse.stats["subgraphs"] > good.stats["subgraphs"]
    with pytest.raises(hv.PartitionCheckError) as err:
        hv.check(worse, like=str(path))
    assert (f"like {path}: subgraphs {worse.stats['subgraphs']} vs {good.stats['subgraphs']} saved"
            in str(err.value))
    assert "coverage" in str(err.value)  # tanh forced out: less coverage too


@pytest.mark.parametrize("kwargs, words", [
    ({"max_subgrafs": 3}, "did you mean 'max_subgraphs'"),
    ({"max_subgraphs": "3"}, "max_subgraphs is a whole number"),
    ({"max_subgraphs": True}, "max_subgraphs is a whole number"),
    ({"min_coverage": 95}, "min_coverage is a fraction between 0 and 1"),
    ({"max_subgraphs_by_backend": {"tensorrtt": 1}}, "not a backend of this partition"),
    ({"max_subgraphs_by_backend": 3}, "maps a backend"),
    ({"like": 3}, "like= takes a saved partition"),
])
def test_wrong_limits_are_one_line_errors(graph, kwargs, words) -> None:
    part = hv.partition(graph)
    with pytest.raises(hv.ConfigError) as err:
        hv.check(part, **kwargs)
    assert words in str(err.value) and "\n" not in str(err.value)
