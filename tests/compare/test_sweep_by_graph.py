"""hv.sweep(..., ir="torch_compile"): one row per configuration, stats summed over dynamo's graphs
(each row equal to hv.partition(..., ir="torch_compile") with that setting), plus graphs,
graph_breaks and graphs_left_whole; a capture given is not captured again; threads and out=."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pandas as pd
import pytest

import hierviz as hv
from tests.dynamo_models import three_breaks

GRID = {"min_block_size": [1, 3, 7], "torch_executed_ops": [[], ["torch.ops.aten.relu.default"]]}


@pytest.fixture(scope="module")
def model():
    return three_breaks()


@pytest.fixture(scope="module")
def table(model):
    net, inputs = model
    return hv.sweep(net, inputs, GRID, ir="torch_compile", progress=False)


def test_each_row_is_that_setting_partitioned_graph_by_graph(model, table) -> None:
    net, inputs = model
    assert len(table) == 6 and table.error.isna().all()
    cols = list(table.columns)
    assert cols.index("boundary_tensors") < cols.index("graphs") < cols.index("graph_breaks") < cols.index("error")
    seen = set()
    for row in table.itertuples():
        part = hv.partition(net, inputs, ir="torch_compile", min_block_size=row.min_block_size,
                            torch_executed_ops=row.torch_executed_ops.split(",") if row.torch_executed_ops else [])
        s = part.stats
        assert (row.subgraphs, row.acc_subgraphs, row.boundary_tensors) == (
            s["subgraphs"], s["acc_subgraphs"], s["boundary_tensors"])
        assert row.coverage == s["coverage"] and row.accelerated_coverage == s["accelerated_coverage"]
        for backend, n in s["subgraphs_by_backend"].items():
            assert getattr(row, f"subgraphs_{backend}") == n
        assert (row.graphs, row.graph_breaks, row.graphs_left_whole) == (4, 3, s["graphs_left_whole"])
        assert row.subgraphs == sum(g.stats["subgraphs"] for g in part.graphs)
        seen.add((row.subgraphs, row.graphs_left_whole))
    assert len(seen) > 2  # the settings give different partitions
    assert "recommendation" not in table.columns
    assert list(table.nothing_accelerated) == [row.acc_subgraphs == 0 for row in table.itertuples()]


def test_a_capture_or_partition_is_not_captured_again_and_threads_agree(model, table) -> None:
    net, inputs = model
    part = hv.partition(net, inputs, ir="torch_compile")
    for given in (part, part.capture):
        again = hv.sweep(given, None, GRID, progress=False)  # no inputs: nothing to capture with
        pd.testing.assert_frame_equal(again, table)
    with ThreadPoolExecutor(2) as pool:
        threaded = hv.sweep(part, None, GRID, executor=pool, progress=False)
    pd.testing.assert_frame_equal(threaded, table)


def test_out_file_skips_rows_already_there(model, table, tmp_path) -> None:
    net, inputs = model
    part = hv.partition(net, inputs, ir="torch_compile")
    out = tmp_path / "sweep.csv"
    first = hv.sweep(part, None, {"min_block_size": [1, 3]}, out=out, progress=False)
    assert len(pd.read_csv(out)) == 2
    with pytest.warns(UserWarning, match="2 of 3 row"):
        second = hv.sweep(part, None, {"min_block_size": [1, 3, 7]}, out=out, progress=False)
    assert second.attrs["skipped"] == 2 and list(second.min_block_size) == [1, 3, 7]
    assert list(second.graph_breaks) == [3, 3, 3] and list(second.subgraphs[:2]) == list(first.subgraphs)


def test_executors_it_cannot_take(model) -> None:
    net, inputs = model
    part = hv.partition(net, inputs, ir="torch_compile")
    with pytest.raises(hv.ConfigError, match="Ray tasks take one captured graph"):
        hv.sweep(part, None, {"min_block_size": [1]}, executor="ray", progress=False)
    with ProcessPoolExecutor(1) as pool, pytest.raises(hv.ConfigError, match="ThreadPoolExecutor"):
        hv.sweep(part, None, {"min_block_size": [1]}, executor=pool, progress=False)
    with pytest.raises(hv.ConfigError, match="'torch_compile'"):
        hv.sweep(net, inputs, {"min_block_size": [1]}, ir="torch.compile", progress=False)


@pytest.mark.slow
def test_measured_rows_time_the_whole_model(model) -> None:
    """measure=True: hv.measure of each row's graph-by-graph partition (the model through
    torch.compile with each graph's split module); a subgraph whose backend cannot run here
    falls back and is counted so."""
    net, inputs = model
    part = hv.partition(net, inputs, ir="torch_compile")
    df = hv.sweep(part, inputs, {"min_block_size": [1, 3]}, progress=False,
                  measure={"iters": 2, "warmup": 1, "on_error": "fallback"})
    assert df.error.isna().all() and list(df.graph_breaks) == [3, 3]
    assert df.outputs_match.all() and (df.median_ms > 0).all()
    assert list(df.accelerated + df.fallbacks) == list(df.acc_subgraphs)
