"""part.build() with dynamic shapes: each engine is keyed, shown and run at its TensorRT
optimization profile (min → opt → max), in the same process and across processes."""

from __future__ import annotations

import inspect
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.export import Dim

import hierviz as hv
from hierviz import trt
from hierviz.building.optimization_profiles import profile_text, profiles
from hierviz.capturing.graph_codec import pack_graph, unpack_graph
from tests.building.models import AddsRowOne, ConvNet, SeqBlock, made

needs_rtx = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                               reason="needs TensorRT-RTX, which builds engines on the CPU")
ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys
import torch
from torch.export import Dim
import hierviz as hv
from tests.building.models import ConvNet
batch, top = int(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(0)
model = ConvNet().eval()
x = torch.randn(batch, 3, 16, 16, generator=torch.manual_seed(0))
part = hv.partition(model, (x,), min_block_size=1, dynamic_shapes=({0: Dim("batch", min=1, max=top)},))
builds = part.build(fix=False)
rows = builds.df[["subgraph", "stage", "profile", "engine_bytes", "cached"]].to_dict("records")
print(json.dumps([{k: (int(v) if k == "engine_bytes" else v) for k, v in r.items()} for r in rows]))
"""


def _build_in_new_process(cache: Path, batch: int, top: int) -> list[dict]:
    env = {**os.environ, "HIERVIZ_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(batch), str(top)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@needs_rtx
@pytest.mark.slow
def test_a_wider_range_or_another_example_size_builds_its_own_engine_in_a_new_process(tmp_path):
    first = _build_in_new_process(tmp_path, 4, 8)
    assert [r["stage"] for r in first] == ["built"] and first[0]["cached"] is False
    assert first[0]["profile"] == "x: (1,3,16,16) → (4,3,16,16) → (8,3,16,16)"
    again = _build_in_new_process(tmp_path, 4, 8)
    assert again[0]["cached"] is True and again[0]["engine_bytes"] == first[0]["engine_bytes"]
    wider = _build_in_new_process(tmp_path, 4, 64)  # the same graph but for Dim's max
    assert wider[0]["cached"] is False
    assert wider[0]["profile"] == "x: (1,3,16,16) → (4,3,16,16) → (64,3,16,16)"
    other_opt = _build_in_new_process(tmp_path, 32, 64)  # the example's size is TensorRT's opt shape
    assert other_opt[0]["cached"] is False
    assert other_opt[0]["profile"] == "x: (1,3,16,16) → (32,3,16,16) → (64,3,16,16)"


@needs_rtx
def test_the_opt_shape_is_keyed_in_one_process_too(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    model = ConvNet().eval()
    batch = {"batch": Dim("batch", min=1, max=64)}
    rows = []
    for size in (2, 32):
        x = torch.randn(size, 3, 16, 16)
        builds = hv.partition(model, (x,), min_block_size=1, dynamic_shapes=({0: batch["batch"]},)).build(fix=False)
        rows.append(builds.df.iloc[0].to_dict())
    assert [r["cached"] for r in rows] == [False, False]
    assert [r["profile"] for r in rows] == ["x: (1,3,16,16) → (2,3,16,16) → (64,3,16,16)",
                                             "x: (1,3,16,16) → (32,3,16,16) → (64,3,16,16)"]


@needs_rtx
def test_a_dynamic_sequence_length_shows_on_every_engine_and_in_words(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    model = SeqBlock().eval()
    x = torch.randn(2, 12, 32, generator=torch.manual_seed(0))
    seq = Dim("seq", min=2, max=48)
    part = hv.partition(model, (x,), min_block_size=1, dynamic_shapes=({1: seq},))
    builds = part.build(fix=False)
    assert len(builds.df) >= 1
    for profile in builds.df["profile"]:
        assert "→ (2,12,32) →" in profile and "(2,48,32)" in profile, profile
    text = "\n".join(builds.lines())
    assert "profile: x: (2,1,32) → (2,12,32) → (2,48,32)" in text
    assert "profile: x: (2,1,32) → (2,12,32) → (2,48,32)" in part.report(builds=builds)
    svg = part.render("collapsed", builds=builds).pipe(format="svg").decode()
    assert "optimization profile: x: (2,1,32) → (2,12,32) → (2,48,32)" in svg.replace("&#45;", "-").replace(
        "&#8594;", "→")


@needs_rtx
def test_the_run_stage_runs_the_profiles_min_and_max_and_names_the_shape_it_failed_at(tmp_path, monkeypatch):
    """`x + x[1]` with Dim(min=1): export records the batch from 2 and the graph runs at the
    example's 8 rows, but Torch-TensorRT's profile starts at 1, where x[1] does not exist."""
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    model, x = made(AddsRowOne, 8, 4)
    part = hv.partition(model, x, min_block_size=1,
                        dynamic_shapes=({0: Dim("batch", min=1, max=16)},))
    builds = part.build()
    row = builds.df.iloc[0].to_dict()
    assert (row["stage"], row["node"], row["profile"]) == ("run", "select", "x: (1,4) → (8,4) → (16,4)")
    assert row["error"] == ("at the profile's min (x: (1,4)): IndexError: select(): index 1 out of range for "
                            "tensor of size [1, 4] at dimension 0")
    lines, first = inspect.getsourcelines(AddsRowOne.forward)
    assert row["source"].endswith(f"models.py:{first + len(lines) - 1}: return self.lin(x + x[1]).relu()")
    assert row["fix"].startswith("not a conversion failure: the engine's optimization profile admits the "
                                 "profile's min (x: (1,4)), where the graph fails in PyTorch")
    assert builds.fix is None and not builds.ok


def test_the_profile_is_torch_tensorrts():
    """hierviz reads each input's profile without importing torch_tensorrt; it equals the
    min/opt/max shapes Torch-TensorRT's construct_submodule_inputs gives the engine."""
    if not trt.available():
        pytest.skip("needs torch_tensorrt to compare with")
    model, (x,) = made(ConvNet, 4, 3, 16, 16)
    cases = [({0: Dim("b", min=1, max=8)},), ({0: Dim("b", min=3, max=8)},), ({0: Dim("b")},),
             ({0: Dim("b", min=1, max=8), 2: Dim("h", min=8, max=32)},)]
    from torch_tensorrt.dynamo.partitioning import construct_submodule_inputs

    from hierviz.trt.loading import answer_cuda_queries

    for shapes in cases:
        part = hv.partition(model, (x,), min_block_size=1, dynamic_shapes=shapes)
        sub = part.module._run_on_acc_tensorrt_0
        ours = profiles(sub)
        with answer_cuda_queries():
            theirs = construct_submodule_inputs(sub)
        assert [(p.min, p.opt, p.max) for p in ours] == [
            (tuple(i.shape["min_shape"]), tuple(i.shape["opt_shape"]), tuple(i.shape["max_shape"])) for i in theirs]
    unbounded = profile_text(hv.partition(model, (x,), min_block_size=1,
                                          dynamic_shapes=({0: Dim("b")},)).module._run_on_acc_tensorrt_0)
    assert unbounded == "x: (1,3,16,16) → (4,3,16,16) → (4096,3,16,16) (no upper bound: Torch-TensorRT's default max)"


def test_a_static_input_shows_its_one_shape():
    model, x = made(ConvNet, 2, 3, 8, 8)
    part = hv.partition(model, x, min_block_size=1)
    assert profile_text(part.module._run_on_acc_tensorrt_0) == "x: (2,3,8,8)"


def test_the_workers_copy_of_a_graph_keeps_its_dynamic_dimensions():
    """The explorer's worker gets graphs as data: their symbolic sizes, ranges and example
    sizes come back, so it builds (and keys) the engine the kernel would."""
    from hierviz.building.build_keys import build_key

    model, (x,) = made(ConvNet, 4, 3, 16, 16)
    part = hv.partition(model, (x,), min_block_size=1, dynamic_shapes=({0: Dim("batch", min=1, max=8)},))
    copy = unpack_graph(pack_graph(part.graph))
    again = hv.partition(copy, min_block_size=1)
    sub, sub2 = part.module._run_on_acc_tensorrt_0, again.module._run_on_acc_tensorrt_0
    assert profile_text(sub2) == profile_text(sub) == "x: (1,3,16,16) → (4,3,16,16) → (8,3,16,16)"
    assert build_key(sub2, None) == build_key(sub, None)
    assert [n.name for n in again.graph.graph.nodes] == [n.name for n in part.graph.graph.nodes]


class _MaskedSum(torch.nn.Module):
    """A boolean mask made with `&` (aten.bitwise_and.Tensor, whose Torch-TensorRT validator reads
    meta['tensor_meta']) on a dynamic batch."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = (x > 0) & (x < 1)
        return (x * mask).relu() + 1


def test_the_workers_copy_of_a_dynamic_graph_partitions_as_the_kernel_does():
    """tensor_meta of symbolic sizes does not pickle: the copy makes it again from meta['val'], so
    the validator that reads it keeps the node where the kernel keeps it (before, the worker's
    copy sent bitwise_and to PyTorch and its build showed engines the kernel's partition lacks)."""
    x = torch.randn(4, 8)
    part = hv.partition(_MaskedSum().eval(), (x,), min_block_size=1, dynamic_shapes=({0: Dim("batch", min=2, max=16)},))
    copy = unpack_graph(pickle.loads(pickle.dumps(pack_graph(part.graph))))
    again = hv.partition(copy, config=part.config)
    ands = [n.name for n in part.graph.graph.nodes if n.target is torch.ops.aten.bitwise_and.Tensor]
    assert ands and all(part.backend_of(n) == "tensorrt" for n in ands)
    assert [(n, again.backend_of(n)) for n in ands] == [(n, part.backend_of(n)) for n in ands]
    assert [sg.tag for sg in again.subgraphs] == [sg.tag for sg in part.subgraphs]
    kept = {n.name: n.meta["tensor_meta"] for n in copy.graph.nodes if "tensor_meta" in n.meta}
    for n in part.graph.graph.nodes:
        if "tensor_meta" in n.meta and n.op == "call_function":
            assert kept[n.name].dtype == n.meta["tensor_meta"].dtype
            assert str(kept[n.name].shape) == str(n.meta["tensor_meta"].shape)
