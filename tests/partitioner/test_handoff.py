"""Partition's conveniences (render, save, _repr_html_, compile) reach drawing and latency through
partitioner/handoff.py, which the facade fills when hierviz is imported; re-partitioning and
compile_today reach the partitioner package's top through it too."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.partitioner import handoff


class Small(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1


@pytest.fixture(scope="module")
def part():
    return hv.partition(Small(), (torch.randn(2, 3),), min_block_size=1)


def test_conveniences_are_registered_whenever_a_partition_exists(run_python):
    """Importing only the partitioner imports the facade first, which registers every convenience."""
    proc = run_python("from hierviz.partitioner import handoff, partition\n"
                      "print(sorted(n for n in handoff.CONVENIENCES if callable(handoff.handler(n))))")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == str(sorted(handoff.CONVENIENCES))
    assert {"render", "save", "html", "compile"} <= set(handoff.CONVENIENCES)


def test_they_hand_the_partition_to_drawing(part, tmp_path):
    from hierviz.drawing import render

    assert part.render("collapsed").source == render(part, view="collapsed").source
    assert "digraph" in part.save(tmp_path / "p.dot").read_text(encoding="utf-8")


def test_an_unregistered_convenience_says_what_to_do(part, monkeypatch):
    forced = hv.partition(part.graph, torch_executed_ops={"aten.relu.default"}, min_block_size=1)  # a what-if to run
    # only the Partition's own readers (its report, tables and blockers table) stay registered
    readers = ("report", "ops_table", "summary_table", "blockers_table", "with_build_failures")
    monkeypatch.setattr(handoff, "_PROVIDERS", {k: v for k, v in handoff._PROVIDERS.items() if k in readers})
    calls = {"render": (lambda: part.render(), "drawing layer"), "compile": (lambda: part.compile(), "latency layer"),
             "html": (part._repr_html_, "drawing layer"),
             "compile_today": (lambda: part.compile_today(), "partitioner package")}
    for name, (call, part_name) in calls.items():
        with pytest.raises(hv.HiervizError) as info:
            call()
        assert str(info.value) == (f"Partition.{name} needs hierviz's {part_name}, which registers itself when "
                                   "hierviz is imported: run `import hierviz` first.")
    # a what-if that cannot re-partition says why in its row
    assert forced.blockers().loc[0, "note"].endswith(
        "cannot re-partition: Partition.repartition needs hierviz's partitioner package, which registers itself "
        "when hierviz is imported: run `import hierviz` first.")


def test_only_the_conveniences_can_be_provided():
    with pytest.raises(ValueError, match="no Partition convenience called 'draw'"):
        handoff.provide("draw", lambda: print)
