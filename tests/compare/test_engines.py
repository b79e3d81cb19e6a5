"""torch_tensorrt.compile's partition beside the hierarchical ones: hv.compare_engines, the
sweep grid's `engine`, the explorer's engine control and its "compile today" line, the HTML
report's section, the command line's --engine."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.cli import commands as cli
from hierviz.widget import Explorer
from tests.widget.worker_waits import join_on_worker

needs_trt = pytest.mark.skipif(not trt.available(), reason="engine='fast' runs torch_tensorrt's partitioners")
UNSUPPORTED = 2  # special_i0e and hypot (tests/small_net.py) have no TensorRT converter


@needs_trt
def test_compare_engines_one_row_per_engine(small) -> None:
    model, inputs, gm = small
    df = hv.compare_engines(gm, config=hv.Config(min_block_size=1))
    assert list(df["engine"]) == ["fast", "global", "torch_tensorrt", "hierviz"]
    assert df["error"].isna().all(), df["error"].tolist()
    rows = df.set_index("engine")
    # compile's partitioners: TensorRT only; the two ops without a converter break it in three
    for engine in ("fast", "global"):
        assert rows.loc[engine, "priority"] == "tensorrt"
        assert rows.loc[engine, "subgraphs_tensorrt"] == hv.partition(gm, engine=engine, min_block_size=1
                                                                      ).stats["subgraphs_by_backend"]["tensorrt"]
    assert rows.loc["hierviz", "accelerated_ops"] == hv.partition(gm, min_block_size=1).stats["accelerated_ops"]
    assert {"accelerated_ops", "boundary_tensors", "subgraphs", "what"} <= set(df.columns)
    assert "torch_tensorrt.compile today" in rows.loc["fast", "what"]
    assert "median_ms" not in df.columns


@needs_trt
def test_compare_engines_measures_when_asked(small, fake_measure) -> None:
    model, inputs, gm = small
    df = hv.compare_engines(model, inputs, priority=("inductor",), support={"inductor": hv.support.inductor()},
                            measure={"iters": 2})
    rows = df.set_index("engine")
    assert rows.loc["hierviz", "median_ms"] > 0 and rows.loc["fast", "median_ms"] > 0
    assert rows.loc["fast", "priority"] == "tensorrt" and rows.loc["hierviz", "priority"] == "inductor"


@needs_trt
def test_sweep_grid_varies_the_engine(small) -> None:
    _, _, gm = small
    df = hv.sweep(gm, None, {"engine": ["fast", "hierviz", "hierarchical"], "min_block_size": [1, 3]},
                  base=hv.Config(priority=("tensorrt",)), progress=False)
    assert list(df.columns[:2]) == ["engine", "priority"]
    assert list(df["engine"]) == ["fast", "fast", "hierviz", "hierviz", "torch_tensorrt", "torch_tensorrt"]
    assert df["error"].isna().all()
    fast1 = hv.partition(gm, engine="fast", priority=("tensorrt",), min_block_size=1)
    assert df.iloc[0]["subgraphs_tensorrt"] == fast1.stats["subgraphs_by_backend"]["tensorrt"]
    # a combination the engine cannot take stops the sweep before it runs (issue 23)
    with pytest.raises(hv.ConfigError, match=r"^grid the configuration engine=global skip_fusion=True: "
                                             r"engine='global' .* sets skip_fusion itself"):
        hv.sweep(gm, None, {"engine": ["global"], "skip_fusion": [True]}, progress=False)
    with pytest.raises(hv.ConfigError, match="engine must be one of"):
        hv.sweep(gm, None, {"engine": ["fastest"]}, progress=False)


@needs_trt
def test_explorer_engine_control_and_compile_today_line(small) -> None:
    model, inputs, gm = small
    ex = Explorer(model, inputs, debounce=0, min_block_size=1)
    assert ex.controls["engine"].options == ("hierviz", "fast", "global", "torch_tensorrt")
    fast = hv.partition(gm, engine="fast", min_block_size=1)
    engines = fast.stats["subgraphs_by_backend"]["tensorrt"]
    join_on_worker(ex.compile_today_thread, "the compile-today line never came")  # made in the background (worker)
    assert (f"torch_tensorrt.compile today (fast):</span> <b>{engines}</b> "
            "TensorRT engine(s)") in ex.panels["stats"].value
    assert ex.internal_errors == []
    ex.controls["engine"].value = "fast"
    assert ex.partition.engine == "fast"
    assert [sg.nodes for sg in ex.partition.subgraphs] == [sg.nodes for sg in fast.subgraphs]
    assert list(ex.history["engine"]) == ["hierviz", "fast"]
    ex.controls["skip_fusion"].value = True  # not a setting compile's partitioners take
    assert ex.partition is None and "engine='fast'" in ex.error
    ex.controls["skip_fusion"].value = False
    ex.controls["engine"].value = "hierviz"
    assert ex.partition.engine == "hierviz" and ex.error is None
    ex.controls["engine"].value = "fastest"  # refused, with a message; the control keeps its value
    assert ex.controls["engine"].value == "hierviz"
    assert "engine must be one of hierviz, fast, global, torch_tensorrt" in ex.errors["control"]


@needs_trt
def test_html_report_shows_compile_today(small, tmp_path) -> None:
    _, _, gm = small
    p = hv.partition(gm, min_block_size=1)
    today = p.compile_today()  # explicit, once: kept in the process's cache of them
    assert p.compile_today() is today and p.compile_today(compute=False) is today
    text = p.save(tmp_path / "r.html").read_text()
    assert "torch_tensorrt.compile today" in text and "torch_tensorrt.compile (fast)" in text
    assert f"computed once by p.compile_today() in {today.seconds:.2f} s" in text
    fast = hv.partition(gm, engine="fast", min_block_size=1)
    assert f"<td>{fast.stats['accelerated_ops']} / {fast.stats['compute_ops']}</td>" in text


@needs_trt
def test_cli_engine(capsys) -> None:
    assert cli.main(["report", "tiny_conv", "--engine", "fast", "--priority", "tensorrt"]) == 0
    assert "(fast engine)" in capsys.readouterr().out
    assert cli.main(["report", "tiny_conv", "--engine", "fats"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'fast'?" in err and len(err.strip().splitlines()) == 1
    assert cli.main(["report", "tiny_conv", "--engine", "global", "--skip-fusion"]) == 2
    assert "sets skip_fusion itself" in capsys.readouterr().err
    assert cli.main(["sweep", "tiny_conv", "--grid", "engine=fast,hierviz", "--csv", "/dev/null", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "fast" in out.splitlines()[1] and "hierviz" in out.splitlines()[2]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or not trt.available() or not trt.info().can_build,
                    reason="TensorRT needs a CUDA GPU it builds for")
def test_tune_times_what_compile_runs_on_a_gpu(small) -> None:
    model, inputs, _ = small
    inputs = tuple(x.cuda() for x in inputs)
    res = hv.tune(model.cuda(), inputs, {"min_block_size": [1, 3]}, budget=2, device="cuda",
                  measure={"warmup": 2, "iters": 5}, progress=False)
    assert res.baselines["compile_ms"] > 0 and res.baselines["torch_compile_ms"] > 0
    assert "torch_tensorrt.compile" in repr(res)
    df = hv.compare_engines(model.cuda(), inputs, measure={"warmup": 2, "iters": 5})
    assert df.set_index("engine").loc["fast", "median_ms"] > 0


def test_tune_space_cannot_vary_the_engine(small) -> None:
    model, inputs, _ = small
    with pytest.raises(hv.ConfigError, match="its space cannot vary 'engine'.*compile_ms baseline"):
        hv.tune(model, inputs, {"engine": ["fast", "hierviz"]}, budget=2, progress=False)


def test_saving_the_html_report_runs_no_partitioner(small, tmp_path, monkeypatch) -> None:
    """`p.save("x.html")` never runs Torch-TensorRT's fast partitioner: the report says how to
    include what torch_tensorrt.compile runs (p.compile_today()), and nothing else ran."""
    from hierviz.partitioner.upstream import compile_partitioners as compiled
    from hierviz.partitioner.upstream import todays_compile

    _, _, gm = small
    p = hv.partition(gm, min_block_size=1)
    todays_compile.clear_cache()  # compile_today() of this graph and settings, made by a test before, is known

    def forbidden(*_args, **_kwargs):
        raise AssertionError("the HTML report ran a partitioner")

    monkeypatch.setattr(todays_compile, "compile_today", forbidden)
    monkeypatch.setattr(compiled, "partition_compiled", forbidden)
    text = p.save(tmp_path / "r.html").read_text()
    assert "torch_tensorrt.compile today" in text and "Not computed: <code>p.compile_today()</code>" in text
    assert p.compile_today(compute=False) is None
