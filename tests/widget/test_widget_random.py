"""200 random control changes and button presses, invalid ones included: no exception
escapes, and after every step the Explorer shows exactly what hv.partition gives for the
settings its controls show (or exactly the error hv.partition raises)."""

from __future__ import annotations

import html
import os
import random
from pathlib import Path

import pytest

import hierviz as hv
from hierviz.widget import Explorer
from hierviz.compare.columns import config_columns
from hierviz.partitioner import partition as hv_partition

STEPS = 200
# One walk by default; HIERVIZ_EXPLORE_SEEDS=40 runs 40 different walks.
SEEDS = range(int(os.environ.get("HIERVIZ_EXPLORE_SEEDS", "1")))


def random_action(rng: random.Random, ex: Explorer, ops: list[str]) -> str:
    c = ex.controls
    kind = rng.choice(["mbs", "mbs", "box", "priority", "priority", "support", "teo", "teo", "rfc", "skip",
                       "view", "focus", "pin", "unpin", "diff_mode", "measure", "export"])
    if kind == "mbs":
        c["min_block_size"].value = rng.randint(1, c["min_block_size"].max)
    elif kind == "box":
        ex.min_block_size_box.value = rng.randint(1, 8)
    elif kind == "priority":
        pool = ["tensorrt", "inductor"] + (["foo"] if rng.random() < 0.15 else [])
        value = rng.sample(pool, rng.randint(0, len(pool)))
        if value and rng.random() < 0.05:
            value.append(value[0])  # a backend twice: invalid
        c["priority"].value = value
    elif kind == "support":
        keys = ["default", "tensorrt", "inductor", "none"] + (["bogus"] if rng.random() < 0.1 else [])
        c["support"].value = {b: rng.choice(keys) for b in ("tensorrt", "inductor") if rng.random() < 0.8}
    elif kind == "teo":
        value = rng.sample(ops, rng.randint(0, 3))
        r = rng.random()
        if r < 0.08:
            value.append("torch.ops.aten.nope.default")  # unknown op: invalid
        elif r < 0.16:
            value.append("aten.sigmoid.default")  # short spelling
        c["torch_executed_ops"].value = value
    elif kind == "rfc":
        c["require_full_compilation"].value = not c["require_full_compilation"].value
    elif kind == "skip":
        c["skip_fusion"].value = not c["skip_fusion"].value
    elif kind == "view":
        c["view"].value = rng.choice(["auto", "full", "collapsed", "focus"])
    elif kind == "focus":
        options = list(c["focus"].options) + ["", "no_such_node"]
        c["focus"].value = rng.choice(options)
    elif kind == "pin":
        ex.buttons["pin"].click()
    elif kind == "unpin":
        ex.buttons["unpin"].click()
    elif kind == "diff_mode":
        ex.diff_against.value = rng.choice(["previous", "pinned"])
    elif kind == "measure":
        c["measure"].value = not c["measure"].value
    elif kind == "export":
        ex.buttons[rng.choice(["export_svg", "export_csv"])].click()
    return kind


def check(ex: Explorer, gm, step: int, kind: str) -> None:
    where = f"step {step} ({kind})"
    assert not ex.internal_errors, f"{where}: {ex.internal_errors[-1]!r}"
    assert "internal" not in ex.errors, where
    values = ex.control_values_safe()
    try:
        if isinstance(values, Exception):
            raise values
        expected = hv_partition(gm, **values)
    except hv.HiervizError as exc:
        assert ex.partition is None, where
        assert ex.error == str(exc), where
        assert html.escape(str(exc).splitlines()[0]) in ex.panels["error"].value, where
        assert ex.history["error"].iloc[-1] == str(exc), where
        return
    p = ex.partition
    assert ex.error is None, f"{where}: {ex.error}"
    assert p.config == expected.config, where
    assert [(sg.tag, sg.backend, sg.nodes) for sg in p.subgraphs] == \
        [(sg.tag, sg.backend, sg.nodes) for sg in expected.subgraphs], where
    assert p.stats == expected.stats, where
    row = ex.history.iloc[-1]
    for name, value in config_columns(expected.config).items():
        assert row[name] == value, f"{where}: history {name}"
    assert row["subgraphs"] == expected.stats["subgraphs"], where
    for sg in expected.subgraphs:
        assert sg.tag in ex.panels["summary"].value, where
    view, focus = ex.controls["view"].value, ex.controls["focus"].value
    if view != "focus":
        assert "<svg" in ex.panels["diagram"].value and ex.svg is not None, where
    elif focus in [sg.tag for sg in p.subgraphs] or focus in ex.controller.graph_ops.keys() or \
            any(n.name == focus for n in gm.graph.nodes if n.op == "call_function"):
        assert "<svg" in ex.panels["diagram"].value, where
    if ex.controls["measure"].value:
        assert ex.measurement is not None and ex.measurement.median_ms == len(p.subgraphs), where


@pytest.mark.parametrize("seed", SEEDS)
def test_random_control_changes(small, fake_measure, tmp_path: Path, seed: int) -> None:
    model, inputs, gm = small
    ex = Explorer(model, inputs, debounce=0, output_dir=tmp_path)
    ops = sorted(ex.controller.graph_ops)
    rng = random.Random(seed)
    kinds = []
    invalid = 0
    for step in range(STEPS):
        kind = random_action(rng, ex, ops)  # must never raise
        kinds.append(kind)
        check(ex, gm, step, kind)
        invalid += ex.error is not None
    # the walk covered every kind of action, and a fair share of invalid settings
    assert set(kinds) >= {"mbs", "priority", "support", "teo", "rfc", "skip", "view", "focus", "pin", "measure"}
    assert invalid >= 10 and STEPS - invalid >= 10
    assert len(ex.history) > 30
