"""benchmarks/picture_quality.py in its reduced form: on a small Qwen2 (split setting) and the
stack of blocks, every view meets the goals (auto <= 8,000 x 4,000 px, no edge label over a
node or another label, no edge through a cluster title in the module view, <= 5 % upward
edges in the module and collapsed views); and the measuring itself sees what it should."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import picture_quality

from .stack_models import captured, odd_partition


def _node(gvid: int, x: float, y: float) -> dict:
    return {"_gvid": gvid, "name": f"n{gvid}", "pos": f"{x},{y}", "width": "1", "height": "0.5"}


def _label(x: float, y: float, text: str = "f32[1,8]") -> list[dict]:
    return [{"op": "F", "size": 8.0, "face": "Helvetica"},
            {"op": "T", "pt": [x, y], "align": "c", "width": 40.0, "text": text}]


def test_measuring_sees_overlaps_crossings_and_upward_edges():
    layout = {"bb": "0,0,300,600",
              "objects": [_node(0, 100, 500), _node(1, 100, 300), _node(2, 100, 100),
                          {"_gvid": 3, "name": "cluster_c", "_ldraw_": _label(200, 400, "Block")}],
              "edges": [{"tail": 0, "head": 1, "_ldraw_": _label(100, 300)},          # over node 1
                        {"tail": 2, "head": 1, "_ldraw_": _label(250, 200)},          # upward, label free
                        {"tail": 0, "head": 2, "_draw_": [{"op": "b", "points": [[200, 500], [200, 450],
                                                                                 [200, 350], [200, 100]]}]}]}
    q = picture_quality.quality(json.dumps(layout))
    assert (q["width_px"], q["height_px"]) == (400, 800)
    assert q["labels"] == 2 and q["overlaps"] == 1
    assert q["edges"] == 3 and q["upward"] == 1
    assert q["title_crossings"] == 1  # the third edge runs through the cluster title at (200, 400)
    row = {"view": "modules", "drawn": "modules", **q}
    assert picture_quality.goals(row) == ["1 label overlaps", "33.3% upward edges"]


@pytest.mark.slow
def test_small_qwen2_meets_the_goals(needs_dot):
    rows = picture_quality.rows_for("qwen2_2", settings=("split",))
    assert {r["view"] for r in rows} == set(picture_quality.VIEWS)
    assert all(r["subgraphs"] > 1 for r in rows)  # the split setting draws many subgraphs
    missed = {(r["setting"], r["view"]): r["missed"] for r in rows if r["missed"]}
    assert not missed
    assert all(r["title_crossings"] == 0 for r in rows if r["drawn"] == "modules")


def test_stack_of_blocks_meets_the_goals(needs_dot):
    part = odd_partition(captured())
    for view in picture_quality.VIEWS:
        row = picture_quality.measure(part, view)
        assert not picture_quality.goals(row), (view, row)
        if row["drawn"] == "modules":
            assert row["upward"] == 0 and row["title_crossings"] == 0 and row["labels"] > 5
