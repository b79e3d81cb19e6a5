"""hv.sweep: one row per configuration, columns in a fixed order, values equal to separate
hv.partition calls, errors as rows, cached partitions, executors."""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest

import hierviz as hv
from hierviz.compare import cache_info, clear_cache, sweep
from hierviz.partitioner import partition as hv_partition

from tests.small_net import UNSUPPORTED

RELU = "torch.ops.aten.relu.default"
SIGMOID = "torch.ops.aten.sigmoid.default"
CONFIG_COLUMNS = ["priority", "support", "min_block_size", "torch_executed_ops", "require_full_compilation",
                  "skip_fusion", "demote_to"]
STAT_COLUMNS = ["subgraphs", "acc_subgraphs", "subgraphs_tensorrt", "subgraphs_inductor", "subgraphs_torch",
                "coverage", "accelerated_coverage", "boundary_tensors", "nothing_accelerated"]
LATENCY_COLUMNS = ["median_ms", "p10_ms", "p90_ms", "cv", "speedup", "speedup_ci", "verdict", "max_abs_error",
                   "outputs_match", "mismatch_at", "accelerated", "fallbacks", "compile_s", "cache_hits",
                   "cache_misses"]
INDUCTOR = {"inductor": hv.support.inductor()}


class RecordingExecutor(ThreadPoolExecutor):
    """A thread pool that records what it was given and on which threads it ran."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.submitted: list[tuple] = []
        self.threads: set[str] = set()

    def submit(self, fn, /, *args, **kwargs):
        self.submitted.append(args)

        def run(*a, **k):
            self.threads.add(threading.current_thread().name)
            return fn(*a, **k)

        return super().submit(run, *args, **kwargs)


def test_columns_and_row_order(small) -> None:
    model, inputs, _ = small
    df = sweep(model, inputs, {"min_block_size": [1, 3, 5], "torch_executed_ops": [[], [RELU, SIGMOID]]},
               progress=False)
    assert list(df.columns) == CONFIG_COLUMNS + STAT_COLUMNS + ["error"]
    assert len(df) == 6
    # cartesian product, first grid key slowest
    assert list(df["min_block_size"]) == [1, 1, 3, 3, 5, 5]
    assert list(df["torch_executed_ops"]) == ["", f"{RELU},{SIGMOID}"] * 3  # sorted, comma-joined
    assert set(df["priority"]) == {"tensorrt>inductor"} and set(df["support"]) == {"default"}
    assert df["error"].isna().all()
    assert df["subgraphs"].dtype.kind == "i"


def test_backend_columns_follow_the_backends_seen(small) -> None:
    model, inputs, _ = small
    df = sweep(model, inputs, {"priority": ["inductor>tensorrt", ("tensorrt",)]}, base={"support": INDUCTOR},
               progress=False)
    assert [c for c in df.columns if c.startswith("subgraphs_")] == \
        ["subgraphs_inductor", "subgraphs_tensorrt", "subgraphs_torch"]
    assert list(df["priority"]) == ["inductor>tensorrt", "tensorrt"]
    assert list(df["support"]) == ["inductor=inductor"] * 2
    assert df.loc[0, "subgraphs_inductor"] == 1 and df.loc[1, "subgraphs_inductor"] == 0


def test_values_equal_separate_partition_calls(small) -> None:
    model, inputs, gm = small
    grid = {"priority": [("tensorrt", "inductor"), ("inductor", "tensorrt")], "min_block_size": [1, 2, 5],
            "skip_fusion": [False, True]}
    df = sweep(model, inputs, grid, base=hv.Config(support=INDUCTOR), progress=False)
    assert len(df) == 12
    for _, row in df.iterrows():
        p = hv_partition(gm, priority=tuple(row["priority"].split(">")), support=INDUCTOR,
                         min_block_size=int(row["min_block_size"]), skip_fusion=bool(row["skip_fusion"]))
        s = p.stats
        assert row["subgraphs"] == s["subgraphs"] and row["acc_subgraphs"] == s["acc_subgraphs"]
        for backend, n in s["subgraphs_by_backend"].items():
            assert row[f"subgraphs_{backend}"] == n
        assert row["coverage"] == s["coverage"]
        assert row["accelerated_coverage"] == s["accelerated_coverage"]
        assert row["boundary_tensors"] == s["boundary_tensors"]
        assert row["nothing_accelerated"] == (s["acc_subgraphs"] == 0)


def test_no_recommendation_column_and_no_recommend_per_row(small, monkeypatch) -> None:
    """recommend() re-partitions once per size: a sweep row never pays for it (issue 37); the
    user asks part.recommend() on the partition that interests them."""
    from hierviz.partitioner import Partition

    _, _, gm = small
    called = []
    monkeypatch.setattr(Partition, "recommend", lambda self, sizes=None: called.append(1))
    df = sweep(gm, None, {"min_block_size": [1, 2, 3]}, progress=False)
    assert "recommendation" not in df.columns and called == []


def test_nothing_accelerated_is_a_column(small) -> None:
    _, _, gm = small
    df = sweep(gm, None, {"priority": [("inductor",), ("tensorrt",)]}, progress=False)
    # inductor's default support takes no ops: that row accelerates nothing, and says so
    assert list(df["nothing_accelerated"]) == [True, False]
    assert list(df["priority"]) == ["inductor", "tensorrt"] and list(df["acc_subgraphs"] == 0) == [True, False]


def test_failing_configurations_become_error_rows(small) -> None:
    """A configuration that is valid but fails when partitioned is a row with its error; a
    value the settings parser refuses stops the sweep first (tests/compare/test_grid_check.py)."""
    model, inputs, _ = small
    df = sweep(model, inputs, {"require_full_compilation": [False, True],
                               "torch_executed_ops": [[], ["torch.ops.aten.relu.default"]]}, progress=False)
    assert len(df) == 4
    assert df["error"].isna().tolist() == [True, True, False, False]
    assert "require_full_compilation=True" in df.loc[2, "error"]
    assert pd.isna(df.loc[2, "subgraphs"]) and df.loc[0, "subgraphs"] == 3
    # the row still says which configuration failed
    assert bool(df.loc[2, "require_full_compilation"]) is True
    assert df.loc[3, "torch_executed_ops"] == "torch.ops.aten.relu.default"
    with pytest.raises(hv.ConfigError, match=r"^grid has 2 bad values \(nothing ran\): torch_executed_ops="):
        sweep(model, inputs, {"torch_executed_ops": [["torch.ops.aten.nope.default"], ["aten.nope2.default"]]},
              progress=False)
    with pytest.raises(hv.ConfigError, match=r"^grid priority=\(\): priority is empty"):
        sweep(model, inputs, {"priority": [(), "tensorrt"]}, progress=False)


def test_bad_grids_raise_config_error(small) -> None:
    model, inputs, _ = small
    with pytest.raises(hv.ConfigError, match="unknown Config field"):
        sweep(model, inputs, {"min_block": [1, 2]}, progress=False)
    with pytest.raises(hv.ConfigError, match="no values"):
        sweep(model, inputs, {"min_block_size": []}, progress=False)
    with pytest.raises(hv.ConfigError, match="grid must map"):
        sweep(model, inputs, [("min_block_size", [1])], progress=False)


def test_table_spellings_round_trip(small) -> None:
    """Values as the table writes them ('a>b', 'op1,op2') can be fed back as a grid."""
    model, inputs, _ = small
    first = sweep(model, inputs, {"priority": [("tensorrt", "inductor")], "torch_executed_ops": [{RELU, SIGMOID}],
                                  "min_block_size": 2}, progress=False)
    again = sweep(model, inputs, {"priority": list(first["priority"]),
                                  "torch_executed_ops": list(first["torch_executed_ops"]),
                                  "min_block_size": list(first["min_block_size"])}, progress=False)
    pd.testing.assert_frame_equal(first, again)


def test_second_sweep_reuses_cached_partitions(small) -> None:
    model, inputs, _ = small
    grid = {"min_block_size": list(range(1, 9)), "skip_fusion": [False, True]}
    clear_cache()
    first = sweep(model, inputs, grid, progress=False)
    assert first.attrs["partition_cache_misses"] == 16 and first.attrs["partition_cache_hits"] == 0
    second = sweep(model, inputs, grid, progress=False)
    assert second.attrs["partition_cache_hits"] == 16 and second.attrs["partition_cache_misses"] == 0
    assert cache_info()["size"] == 16
    pd.testing.assert_frame_equal(first, second)


def test_executor_runs_configurations_and_keeps_grid_order(small) -> None:
    model, inputs, _ = small
    grid = {"min_block_size": [8, 1, 5, 2, 3], "torch_executed_ops": [[], [RELU]]}
    clear_cache()
    plain = sweep(model, inputs, grid, progress=False)
    clear_cache()
    with RecordingExecutor(max_workers=2) as pool:
        parallel = sweep(model, inputs, grid, executor=pool, progress=False)
    assert len(pool.submitted) == 10
    assert [args[1].min_block_size for args in pool.submitted] == [8, 8, 1, 1, 5, 5, 2, 2, 3, 3]  # (graph, Config)
    assert pool.threads and all(name != threading.current_thread().name for name in pool.threads)
    pd.testing.assert_frame_equal(plain, parallel)


def test_progress_bar_in_a_terminal(small, capsys) -> None:
    model, inputs, _ = small
    sweep(model, inputs, {"min_block_size": [1, 2]}, progress=True)
    assert "hv.sweep" in capsys.readouterr().err
    sweep(model, inputs, {"min_block_size": [1, 2]}, progress=False)
    assert capsys.readouterr().err == ""


def test_measured_sweep_has_latency_columns(small, fake_measure) -> None:
    model, inputs, _ = small
    df = sweep(model, inputs, {"min_block_size": [1, 5], "require_full_compilation": [False, True]},
               measure={"iters": 3}, progress=False)
    assert list(df.columns) == CONFIG_COLUMNS + STAT_COLUMNS + LATENCY_COLUMNS + ["error"]
    assert list(df["median_ms"].isna()) == [False, True, False, True]  # invalid rows are not measured
    assert df.loc[0, "median_ms"] == df.loc[0, "subgraphs"]
    assert len(fake_measure.calls) == 2 and fake_measure.calls[0][1].iters == 3
    # measuring again: the compile cache (here: the fake's) reports hits
    df2 = sweep(model, inputs, {"min_block_size": [1, 5]}, measure=True, progress=False)
    assert df2.attrs["compile_cache_misses"] == 0 and df2.attrs["compile_cache_hits"] == int(df2["subgraphs"].sum())
    fake_measure.fail = "no GPU"
    df3 = sweep(model, inputs, {"min_block_size": [1]}, measure=True, progress=False)
    assert df3.loc[0, "error"] == "no GPU" and df3.loc[0, "subgraphs"] == 5


def test_real_measurement_on_cpu(small) -> None:
    """One real hv.measure run: inductor takes everything, so no TensorRT (no GPU) is needed."""
    model, inputs, _ = small
    pytest.importorskip("hierviz.latency.measure_call")
    df = sweep(model, inputs, {"min_block_size": [1, 2]},
               base={"priority": ("inductor",), "support": INDUCTOR, "torch_executed_ops": UNSUPPORTED},
               measure={"iters": 3, "warmup": 1}, progress=False)
    assert df["error"].isna().all(), df["error"].tolist()
    assert (df["median_ms"] > 0).all() and df["outputs_match"].all()
    assert df["max_abs_error"].max() < 1e-3
    # the speed-up comes with its interval, which holds the point estimate
    for speedup, (low, high) in zip(df["speedup"], df["speedup_ci"]):
        assert 0 < low <= speedup <= high
    again = sweep(model, inputs, {"min_block_size": [1, 2]},
                  base={"priority": ("inductor",), "support": INDUCTOR, "torch_executed_ops": UNSUPPORTED},
                  measure={"iters": 3, "warmup": 1}, progress=False)
    assert again.attrs["compile_cache_misses"] == 0 and again.attrs["compile_cache_hits"] > 0
    assert not math.isnan(again.loc[0, "median_ms"])


def test_hv_sweep_public_name(small) -> None:
    model, inputs, _ = small
    import hierviz.compare  # noqa: F401

    df = hv.sweep(model, inputs, {"min_block_size": [1, 5]}, progress=False)
    assert list(df["subgraphs"]) == [5, 3]
