"""Partition's conveniences (render, save, _repr_html_, compile, build) reach the layers above through the typed
slots of partitioner/handoff.py's seam, which the facade fills when hierviz is imported; re-partitioning,
compile_today, the report and the tables are installed there by the partitioner package."""

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


def test_conveniences_are_installed_whenever_a_partition_exists(run_python):
    """Importing only the partitioner imports the facade first, which installs every convenience, each loading its
    layer only on first use."""
    proc = run_python("import sys\nfrom hierviz.partitioner import handoff, partition\n"
                      "print(handoff.seam.installed(), 'hierviz.drawing.views' in sys.modules)")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == f"{list(handoff.CONVENIENCES)} False"
    assert {"render", "save", "html", "compile", "build", "report", "blockers_table"} <= set(handoff.CONVENIENCES)


def test_they_hand_the_partition_to_drawing(part, tmp_path):
    from hierviz.drawing import render

    assert part.render("collapsed").source == render(part, view="collapsed").source
    assert "digraph" in part.save(tmp_path / "p.dot").read_text(encoding="utf-8")


def test_a_lazily_installed_convenience_keeps_its_signature():
    """Partition.render checks its keywords against the drawing function's: the lazy wrapper shows them."""
    from hierviz.errors import parameter_names

    assert "highlight" in parameter_names(handoff.seam.render)
    with pytest.raises(hv.ConfigError, match="highlite"):
        hv.partition(Small(), (torch.randn(2, 3),), min_block_size=1).render(highlite="blockers")


def test_an_uninstalled_convenience_says_what_to_do(part, monkeypatch):
    forced = hv.partition(part.graph, torch_executed_ops={"aten.relu.default"}, min_block_size=1)  # a what-if to run
    # only the Partition's own readers (its report, tables and blockers table) stay installed
    for name in ("render", "compile", "html", "compile_today", "repartition"):
        monkeypatch.delitem(vars(handoff.seam), name)
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


def test_only_the_conveniences_have_slots():
    with pytest.raises(AttributeError, match="the seam has no slot 'draw'; its slots are render, save, html"):
        handoff.seam.draw = print
    assert not hasattr(handoff, "handler")  # no convenience is looked up by a string
