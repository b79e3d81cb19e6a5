"""hv.sweep and hv.tune on a real local Ray (2 CPUs, started once for this module): the same
rows as a local sweep (for a model with a custom op too: its module is imported in the
workers), a killed worker is a failed row and the rest go on; and the packed graph that travels
to the workers partitions and runs like the original."""

from __future__ import annotations

import builtins
import pickle

import pytest
import torch

import hierviz as hv
from hierviz.capturing.graph_codec import pack_graph, unpack_graph
from tests.custom_op_models import SinNet, example, seeded

RELU = "torch.ops.aten.relu.default"
TANH = "torch.ops.aten.tanh.default"
FAST = {"warmup": 0, "iters": 3}
PRINT = builtins.print  # Ray's driver would replace it; a model's print then breaks inside Ray's code


def test_packed_graph_partitions_and_runs_like_the_original(small) -> None:
    model, inputs, gm = small
    copy = unpack_graph(pickle.loads(pickle.dumps(pack_graph(gm))), inputs)
    assert [n.name for n in copy.graph.nodes] == [n.name for n in gm.graph.nodes]
    for cfg in (hv.Config(), hv.Config(priority=("inductor", "tensorrt"), support={"inductor": hv.support.inductor()},
                                       min_block_size=1, torch_executed_ops={RELU})):
        a, b = hv.partition(gm, config=cfg), hv.partition(copy, config=cfg)
        assert [(s.tag, s.backend, s.nodes, s.inputs, s.outputs) for s in a.subgraphs] == \
            [(s.tag, s.backend, s.nodes, s.inputs, s.outputs) for s in b.subgraphs]
    with torch.no_grad():
        assert torch.equal(copy(*inputs), gm(*inputs))


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    from hierviz.compare.ray_executor import start_ray

    started = not ray.is_initialized()
    if started:
        start_ray(ray, num_cpus=2)
    yield ray
    if started:
        ray.shutdown()


def _own_backend():
    """A backend whose compiler runs the subgraph as it is (defined here, so Ray pickles it by value)."""
    def exact(gm, example_inputs):
        return gm

    support = hv.support.where(lambda node: node.op == "call_function", name="every op")
    return support, exact


@pytest.mark.slow
def test_ray_sweep_rows_equal_the_local_sweep(small, ray_local) -> None:
    model, inputs, _ = small
    support, exact = _own_backend()
    base = hv.Config(priority=("exact",), support={"exact": support})
    grid = {"min_block_size": [1, 5], "torch_executed_ops": [[], [RELU]]}
    measure = {**FAST, "compilers": {"exact": exact}}
    local = hv.sweep(model, inputs, grid, base=base, measure=measure, progress=False)
    remote = hv.sweep(model, inputs, grid, base=base, measure=measure, executor="ray", progress=False)
    assert list(remote.columns) == list(local.columns)
    partition_columns = [c for c in local.columns if c in (
        "priority", "min_block_size", "torch_executed_ops", "subgraphs", "acc_subgraphs", "subgraphs_exact",
        "subgraphs_torch", "coverage", "accelerated_coverage", "boundary_tensors", "nothing_accelerated")]
    assert remote[partition_columns].equals(local[partition_columns])
    assert remote["error"].isna().all() and remote["outputs_match"].all()
    assert (remote["median_ms"] > 0).all()
    assert remote.attrs["compile_cache_misses"] >= 1
    assert builtins.print is PRINT


@pytest.mark.slow
def test_ray_sweeps_a_model_with_a_custom_op(ray_local) -> None:
    """The workers import tests.custom_op_models, which registers the graph's op, before they
    read the graph (from the folder it was imported from here, where Ray's path lacks it)."""
    model, inputs = seeded(SinNet), example(SinNet)
    support, exact = _own_backend()
    base = hv.Config(priority=("exact",), support={"exact": support})
    grid = {"min_block_size": [1, 2]}
    measure = {**FAST, "compilers": {"exact": exact}}
    local = hv.sweep(model, inputs, grid, base=base, progress=False)
    remote = hv.sweep(model, inputs, grid, base=base, measure=measure, executor="ray", progress=False)
    assert remote["error"].isna().all(), list(remote["error"])
    assert remote["outputs_match"].all()
    assert remote[list(local.columns)].drop(columns="error").equals(local.drop(columns="error"))


@pytest.mark.slow
def test_a_killed_worker_fails_its_row_and_the_rest_go_on(small, ray_local) -> None:
    model, inputs, _ = small
    support, exact = _own_backend()

    def crash(gm, example_inputs):  # a compiler that takes its process down, as a segfault would
        import os
        import signal

        os.kill(os.getpid(), signal.SIGKILL)

    base = hv.Config(priority=("crashy", "exact"), support={"crashy": hv.support.ops([TANH]), "exact": support},
                     min_block_size=1)
    df = hv.sweep(model, inputs, {"torch_executed_ops": [[], [TANH], [RELU, TANH]]}, base=base,
                  measure={**FAST, "compilers": {"crashy": crash, "exact": exact}}, executor=ray_local,
                  progress=False)
    assert len(df) == 3
    died = df.iloc[0]
    assert "Ray worker" in died["error"] and "died" in died["error"]
    assert died["torch_executed_ops"] == "" and died["priority"] == "crashy>exact"   # the row says which setting
    rest = df.iloc[1:]
    assert rest["error"].isna().all() and rest["outputs_match"].all() and (rest["subgraphs_crashy"] == 0).all()
    assert builtins.print is PRINT


@pytest.mark.slow
def test_tune_on_ray(small, ray_local) -> None:
    model, inputs, _ = small
    support, exact = _own_backend()
    res = hv.tune(model, inputs, {"min_block_size": [1, 2, 5], "torch_executed_ops": [[], [RELU]]},
                  base=hv.Config(priority=("exact",), support={"exact": support}), budget=4,
                  measure={**FAST, "compilers": {"exact": exact}}, executor="ray", progress=False)
    t = res.trials
    assert len(t) == 4 and set(t["status"]) <= {"measured", "duplicate"}
    assert (t["status"] == "measured").any() and res.best is not None
    assert any("Ray tasks" in note for note in res.notes)
    assert builtins.print is PRINT
    dup = t[t["status"] == "duplicate"]
    for _, row in dup.iterrows():   # a duplicate carries its source's figures
        src = t[t["trial"] == row["duplicate_of"]].iloc[0]
        assert row["median_ms"] == src["median_ms"] and row["subgraphs"] == src["subgraphs"]


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="with a CUDA GPU TensorRT is timed like any backend")
def test_tune_on_ray_keeps_tensorrt_where_it_cannot_be_timed(small, ray_local) -> None:
    """A trial measured as a Ray task from a setting with TensorRT, on a machine without a GPU: its
    TensorRT subgraphs run eagerly there, which is no fallback of the trial's; a setting without
    TensorRT is not sent to be measured (tests/compare/test_tune_keeps_tensorrt.py has the rest)."""
    model, inputs, _ = small
    support, exact = _own_backend()
    base = hv.Config(priority=("tensorrt", "exact"), support={"exact": support}, min_block_size=1)
    res = hv.tune(model, inputs, {"priority": [("tensorrt", "exact"), ("exact",)]}, base=base, budget=2,
                  measure={**FAST, "compilers": {"exact": exact}}, executor="ray", progress=False)
    rows = res.trials.set_index("priority")
    assert rows.loc["tensorrt>exact", "status"] == "measured" and rows.loc["tensorrt>exact", "fallbacks"] == 0
    assert rows.loc["exact", "status"] == "changes tensorrt"
    assert "tensorrt" in res.best.priority and res.not_timed and res.not_timed in res.verdict
