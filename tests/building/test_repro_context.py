"""A repro carries the partition's context: an engine input that an op of the model made (not the
model's own input), and an output that an op uses (not one the model returns), reach repro.pt2
through `hierviz_repro::outside`, so that Torch-TensorRT's partitioner in repro.py judges the
part's nodes as it judged them in the model.

The failure is Torch-TensorRT's own: `aten._to_copy` that is the only op on an engine input and an
engine output has only a converter without dynamic-shape support; in the model the partitioner
takes it (its input is made, or its output used, by an op), and the engine fails to convert.
Saved alone, its input and output are the program's, and Torch-TensorRT leaves it to PyTorch
(Qwen3-MoE and Mixtral with a `seq` Dim: their router's `_to_copy` of the top-k indices)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.export import Dim

import hierviz as hv
from hierviz import trt
from hierviz.building.repro import repro_of
from hierviz.building.repro_outside import OP_NAME, inputs_and_outputs, made_by_ops, used_by_ops
from tests.building.failing_converters import (CONTEXT_ERROR, JudgedByItsProducer, RefusesToBuildAfterALayer,
                                               registered_in_new_processes)
from tests.building.models import made

needs_rtx = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                               reason="needs TensorRT-RTX, which builds engines on the CPU")
UNSUPPORTED = "UnsupportedOperatorException: Conversion of function torch._ops.aten.aten::_to_copy not currently " \
              "supported!"


class CastsAfterACat(torch.nn.Module):
    """cat([x, x]) (run in PyTorch: the test's torch_executed_ops), then a cast to float16 that
    leaves the engine: the engine's one node is a `_to_copy` on its input, of a dynamic size."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, x]).to(torch.float16)


class CastsItsInput(torch.nn.Module):
    """The same cast on the model's own input, then relu (run in PyTorch: the test's
    torch_executed_ops): the engine's input is the model's, its output an op's."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.float16).relu()


def _casts_after_a_cat() -> hv.Partition:
    return hv.partition(CastsAfterACat().eval(), (torch.randn(4, 8),), min_block_size=1,
                        torch_executed_ops={"aten.cat"}, dynamic_shapes=({0: Dim("batch", min=2, max=64)},))


def test_the_inputs_made_and_outputs_used_by_ops_are_no_model_input_or_output():
    model = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Tanh()))
    (x,) = [n for n in model.graph.nodes if n.op == "placeholder"]
    x.meta["val"] = torch.zeros(2)
    assert inputs_and_outputs(model) == ({"input_1"}, {"_1"})
    assert made_by_ops(model, set()) == ("input_1",)
    assert made_by_ops(model, {"input_1"}) == ()
    assert used_by_ops(model, set()) == ("_1",)
    assert used_by_ops(model, {"_1"}) == ()


@needs_rtx
@pytest.mark.slow
def test_a_cast_that_fails_only_after_an_op_outside_its_engine_reproduces(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    part = _casts_after_a_cat()
    builds = part.build(fix=False)
    (failed,) = [row for row in builds.rows if row.stage == "convert"]
    assert failed.error == UNSUPPORTED
    repro = repro_of(builds.failed_row(), part)
    assert repro.nodes == ("_to_copy",) and repro.made_outside == ("cat",) and repro.used_outside == ()
    saved = repro.save(tmp_path / "repro")
    log = (tmp_path / "repro" / "repro.log").read_text()
    assert saved.exit_status == 1 and saved.verified is True, log[-3000:]
    assert "Reproduced: the same failure." in log
    ep = torch.export.load(str(tmp_path / "repro" / "repro.pt2"))  # this process has the op defined
    assert [str(n.target) for n in ep.graph.nodes if n.op == "call_function"] == [
        "hierviz_repro.outside.default", "aten._to_copy.default"]
    assert [(int(r.lower), int(r.upper)) for r in ep.range_constraints.values()] == [(4, 128)]
    readme = (tmp_path / "repro" / "README.md").read_text()
    assert readme.startswith("## Convert failure: ")
    assert ("Outside this part, ops of the model made `cat`. Torch-TensorRT's partitioner judges each node with the "
            "ops around it in the whole graph") in readme
    assert f"`repro.pt2` passes `cat` through `{OP_NAME}`" in readme
    script = (tmp_path / "repro" / "repro.py").read_text()
    assert '@torch.library.custom_op("hierviz_repro::outside", mutates_args=())' in script


@needs_rtx
@pytest.mark.slow
def test_a_cast_of_the_models_input_that_an_op_outside_uses_reproduces(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    model, x = made(CastsItsInput, 4, 8)
    part = hv.partition(model, x, min_block_size=1, torch_executed_ops={"aten.relu"},
                        dynamic_shapes=({0: Dim("batch", min=2, max=64)},))
    builds = part.build(fix=False)
    (failed,) = [row for row in builds.rows if row.stage == "convert"]
    assert failed.error == UNSUPPORTED
    repro = repro_of(builds.failed_row(), part)
    assert repro.made_outside == () and repro.used_outside == ("_to_copy",)  # x is the model's input
    saved = repro.save(tmp_path / "repro")
    assert saved.exit_status == 1, (tmp_path / "repro" / "repro.log").read_text()[-3000:]
    ep = torch.export.load(str(tmp_path / "repro" / "repro.pt2"))
    assert [str(n.target) for n in ep.graph.nodes if n.op == "call_function"] == [
        "aten._to_copy.default", "hierviz_repro.outside.default"]
    readme = (tmp_path / "repro" / "README.md").read_text()
    assert "Outside this part, ops of the model use `_to_copy`." in readme


@needs_rtx
def test_the_models_input_is_not_passed_through_the_stand_in_and_values_its_ops_use_are(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    model, x = made(RefusesToBuildAfterALayer, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    repro = repro_of(part.build(fix=False).failed_row(), part)
    assert repro.nodes == ("addmm", "clamp")
    assert repro.made_outside == ()  # addmm's input is the model's x
    assert repro.used_outside == ("addmm", "clamp")  # the add after them, left out of the part, uses both
    assert f"passes `addmm`, `clamp` through `{OP_NAME}`" in repro.issue_text()
    assert OP_NAME not in dataclasses.replace(repro, used_outside=()).issue_text()


@needs_rtx
@pytest.mark.slow
def test_a_repro_whose_ops_torch_tensorrt_leaves_to_pytorch_says_which_and_never_claims_the_failure(tmp_path,
                                                                                                    monkeypatch):
    registered_in_new_processes(monkeypatch, tmp_path / "site")
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    model, x = made(JudgedByItsProducer, 4, 8)
    part = hv.partition(model, x, min_block_size=1, torch_executed_ops={"aten.relu"})
    builds = part.build(fix=False)
    (failed,) = [row for row in builds.rows if row.stage == "convert"]
    assert failed.error == f"RuntimeError: {CONTEXT_ERROR}"
    repro = repro_of(builds.failed_row(), part)
    assert repro.nodes == ("judged",) and repro.left_to_pytorch == ()
    saved = repro.save(tmp_path / "repro")
    assert saved.exit_status == 0, (tmp_path / "repro" / "repro.log").read_text()[-3000:]
    assert saved.left_to_pytorch == ("torch.ops.hierviz_test.judged.default",)
    said = ("; Torch-TensorRT's partitioner leaves torch.ops.hierviz_test.judged.default to PyTorch in repro.pt2, "
            "which in the model it took into the engine, so repro.py builds another engine")
    assert repr(saved).endswith(f"did not reproduce: repro.py builds it without the failure in a fresh process{said} "
                                "(see its repro.log)>")
    readme = (tmp_path / "repro" / "README.md").read_text()
    assert readme.startswith("## Did not reproduce: ")
    assert f"`repro.py` did not reproduce it: in a fresh process it builds{said}." in readme
    assert "Torch-TensorRT fails to" not in readme
