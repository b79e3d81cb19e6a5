"""The repro of a lowering that breaks the graph (stage "run"): the smallest part of the model's
exported graph whose lowered form fails in PyTorch, and its repro.py, which lowers it with
Torch-TensorRT and runs it in a fresh process."""

from __future__ import annotations

import dataclasses
import gc
import subprocess
import sys

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.building.reduction import part_of
from hierviz.building.repro import exported_model
from tests.building.models import LastRowWrite, made
from tests.building.test_repro import _imports

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")

SLICE = "RuntimeError: expected src to have a size equal to the slice of self. src size = [2, 1], slice size = [2, 0]"


def _last_row_builds() -> tuple[torch.nn.Module, hv.Builds]:
    model, x = made(LastRowWrite, 2, 4)
    builds = hv.partition(model, x, min_block_size=1).build(fix=False)
    assert [(r.stage, r.node) for r in builds.rows] == [("run", "slice_scatter")]
    return model, builds


def test_a_broken_lowering_reduces_to_the_last_row_write_before_lowering():
    _, builds = _last_row_builds()
    repro = builds.repro()
    # the exported graph's node the lowering turns into slice_scatter(start=-1, end=0): h[:, -1] = ...
    assert repro.nodes == ("select_scatter",)
    assert [n.target for n in repro.graph.graph.nodes if n.op == "call_function"] == [
        torch.ops.aten.select_scatter.default]
    assert (repro.stage, repro.exception, repro.error) == ("run", "RuntimeError", SLICE)
    assert repr(repro) == ("<hv.Repro: 1 of 8 nodes of the model's exported graph fail in PyTorch once Torch-TensorRT "
                           "lowered them, as _run_on_acc_tensorrt_0 does (RuntimeError: expected src to have a size "
                           f"equal to the sl...), found in {repro.builds} lowerings>")
    assert 1 < repro.builds < 20 and repro.verified is None
    text = repro.issue_text()
    assert "models.py:20: h[:, -1] = h[:, 0] * 2" in text
    assert "aten.slice_scatter.default(" in text and ", 1, -1, 0)" in text  # what the lowering made of it


def test_the_one_liner_partition_keeps_its_model_for_the_repro():
    builds = hv.partition(LastRowWrite().eval(), torch.randn(2, 4), min_block_size=1).build(fix=False)
    gc.collect()
    repro = builds.repro()
    assert repro.nodes == ("select_scatter",) and (repro.stage, repro.error) == ("run", SLICE)


def test_a_run_failure_of_a_graph_whose_model_is_gone_says_so():
    graph = hv.capture(*made(LastRowWrite, 2, 4))  # a graph given: it does not keep the model
    gc.collect()
    builds = hv.partition(graph, min_block_size=1).build(fix=False)
    with pytest.raises(hv.ConfigError, match=r"the model this partition was captured from is not reachable .* call "
                                             r"hv.partition\(model, example_inputs, \.\.\.\)\.build\(\)\.repro\(\)"):
        builds.repro()


@pytest.mark.slow
def test_the_saved_lowering_repro_fails_the_same_way_in_a_fresh_process(tmp_path):
    _, builds = _last_row_builds()
    saved = builds.repro().save(tmp_path)
    assert saved.verified is True
    assert repr(saved).endswith("; verified: repro.py fails the same way in a fresh process>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "repro.log", "repro.pt2", "repro.py"]
    assert _imports(tmp_path / "repro.py") - set(sys.stdlib_module_names) == {"torch", "torch_tensorrt"}
    log = (tmp_path / "repro.log").read_text()
    assert f"The lowered graph failed in PyTorch with {SLICE}" in log and "Reproduced: the same failure." in log
    ep = torch.export.load(str(tmp_path / "repro.pt2"))  # before lowering: the write, not the broken slice
    ops = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.select_scatter.default in ops and torch.ops.aten.slice_scatter.default not in ops
    done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1


@pytest.mark.slow
def test_a_part_whose_lowered_form_runs_exits_0(tmp_path):
    _, builds = _last_row_builds()
    repro = builds.repro()
    runs = part_of(exported_model(builds.partition), ["relu"])
    assert runs is not None
    saved = dataclasses.replace(repro, nodes=("relu",), graph=runs).save(tmp_path)
    assert saved.verified is False and "did not reproduce: repro.py lowers and runs it" in repr(saved)
    assert "The lowered graph runs." in (tmp_path / "repro.log").read_text()
    done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0
