"""Issue 42, the rest of the surface: hv.tune, hv.compare_engines and `hierviz tune` take ir=
("torch_compile": what torch.compile(model, backend="torch_tensorrt") runs, graph by graph).
Each trial partitions every dynamo graph with its setting (a MultiGraphPartition) and measures
the whole model; compilers of our own keep the measuring fast."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

import hierviz as hv
from tests.compare.test_tune import FAST, OWN, OWN_COMPILERS, own_tune
from tests.dynamo_models import Prints


@pytest.fixture(scope="module")
def broken():
    torch.manual_seed(0)
    return Prints().eval(), (torch.randn(2, 16),)


def test_tune_graph_by_graph_measures_each_setting_on_every_graph(broken) -> None:
    model, inputs = broken
    res = own_tune(model, inputs, {"min_block_size": [1, 3]}, budget=2, pruning=False, ir="torch_compile")
    t = res.trials
    assert len(t) == 2 and set(t["status"]) <= {"measured", "duplicate"}
    assert (t["graphs"] == 2).all() and (t["graph_breaks"] == 1).all()
    assert res.best is not None and res.best_measurement is not None
    # each trial's counts are hv.partition(..., ir="torch_compile")'s with that setting
    for row in t.itertuples():
        mp = hv.partition(model, inputs, hv.Config(priority=("exact", "wrong"), support=OWN,
                                                    min_block_size=int(row.min_block_size)), ir="torch_compile")
        assert row.subgraphs == mp.stats["subgraphs"]
    assert "graph by graph" in " ".join(res.notes)
    assert isinstance(res.partition(), hv.MultiGraphPartition) and len(res.partition()) == 2


def test_tune_rejects_what_graph_by_graph_cannot_do(broken) -> None:
    model, inputs = broken
    with pytest.raises(hv.ConfigError, match="ir='nope'"):
        own_tune(model, inputs, {"min_block_size": [1]}, budget=1, ir="nope")
    with pytest.raises(hv.ConfigError, match="Ray"):
        own_tune(model, inputs, {"min_block_size": [1]}, budget=1, ir="torch_compile", executor="ray")


def test_compare_engines_graph_by_graph(broken) -> None:
    model, inputs = broken
    df = hv.compare_engines(model, inputs, ir="torch_compile")
    assert list(df["engine"])[-1] == "hierviz"
    hier = df[df["engine"] == "hierviz"].iloc[0]
    mp = hv.partition(model, inputs, ir="torch_compile")
    assert hier["error"] is None or pd.isna(hier["error"])
    assert (hier["subgraphs"], hier["graphs"], hier["graph_breaks"]) == (mp.stats["subgraphs"], 2, 1)
    assert hier["accelerated_ops"] == mp.stats["accelerated_ops"]
    with pytest.raises(hv.ConfigError, match="ir="):
        hv.compare_engines(model, inputs, ir="torch.compile")


def test_compare_engines_measures_graph_by_graph(broken) -> None:
    model, inputs = broken
    support = {"exact": hv.support.where(lambda n: n.op == "call_function", name="every op")}
    df = hv.compare_engines(model, inputs, hv.Config(priority=("exact",), support=support), ir="torch_compile",
                            measure={**FAST, "compilers": OWN_COMPILERS})
    hier = df[df["engine"] == "hierviz"].iloc[0]
    assert hier["median_ms"] > 0 and bool(hier["outputs_match"])


def test_cli_tune_graph_by_graph_refuses_ray_before_capturing(capsys) -> None:
    from hierviz.cli.commands import main

    assert main(["tune", "tiny_conv", "--ir", "torch_compile", "--executor", "ray"]) == 2
    assert "Leave --executor out" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_tune_graph_by_graph(tmp_path, capsys) -> None:
    from hierviz.cli.commands import main

    out = tmp_path / "tune.csv"
    assert main(["tune", "tiny_conv", "--ir", "torch_compile", "--budget", "1", "--iters", "2", "--warmup", "0",
                 "--csv", str(out), "--quiet"]) == 0
    table = pd.read_csv(out)
    assert len(table) == 1 and table["graphs"].iloc[0] == 1 and "status" in table.columns
    assert main(["tune", "tiny_conv", "--ir", "graphs"]) == 2
    assert "--ir" in capsys.readouterr().err
