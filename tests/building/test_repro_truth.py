"""A repro says only what it showed: a dynamic graph's repro keeps its dynamic dimensions (or says
it could not, and why); its README claims a failure only when repro.py showed it; a converter's
failure is told by the error TensorRT logged; the README lists the inputs. The failures are the
test's own (tests/building/failing_converters.py), registered in repro.py's fresh process too."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.export import Dim

import hierviz as hv
from hierviz import trt
from hierviz.building.reduction import part_of
from hierviz.building.repro import repro_of
from hierviz.trt.build_errors import logged_cause
from tests.building.failing_converters import (BUILD_ERROR, DYNAMIC_ERROR, DYNAMIC_MARK, LOGGED_ERROR,
                                               LogsATensorRTError, RefusesADynamicInput, RefusesToBuildAfterALayer,
                                               registered_in_new_processes)
from tests.building.models import AddsRowOne, made

needs_rtx = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                               reason="needs TensorRT-RTX, which builds engines on the CPU")

CUDA = ("[checkMacros.cpp::catchCudaError::247] Error Code 1: Cuda Runtime (In catchCudaError at "
        "/_src/common/dispatch/checkMacros.cpp:247 (cudaError 35: CUDA driver version is insufficient))")
TOPK = ("ITensor::getDimensions: Error Code 3: API Usage Error ([TOPK]-[aten_ops.sort.default]-[sort_topk]: at "
        "least 2 dimensions are required for input. In checkNOrMoreDims at /_src/optimizer/api/network.cpp:837)")


def test_the_logged_cause_is_tensorrts_line_that_names_an_error_never_a_cuda_report():
    assert logged_cause([TOPK, CUDA]) == TOPK
    assert logged_cause([CUDA]) is None  # says nothing of the network
    assert logged_cause(["Torch-TensorRT could not convert the node"]) is None  # no error code, check or exception
    assert logged_cause([]) is None


@needs_rtx
def test_a_convert_failure_whose_tensorrt_log_names_the_cause_gets_that_line_as_its_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    model, x = made(LogsATensorRTError, 2, 8)
    (row,) = hv.partition(model, x, min_block_size=1).build(fix=False).rows
    assert (row.stage, row.exception) == ("convert", "RuntimeError")
    assert row.error is not None and row.error.startswith(LOGGED_ERROR), row.error
    assert "Cuda Runtime" not in row.error
    assert row.details is not None and "RuntimeError: Could not get tensor shape." in row.details


@needs_rtx
def test_the_readme_lists_each_inputs_shape_and_dtype():
    model, x = made(RefusesToBuildAfterALayer, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    text = repro_of(part.build(fix=False).failed_row(), part).issue_text()
    assert "| input | dtype | shape | TensorRT's profile (min → opt → max) |" in text
    assert "| `x` | float32 | (2, 8) | (2,8) |" in text


@needs_rtx
def test_an_unsaved_repro_claims_no_failure_it_has_not_shown():
    model, x = made(RefusesToBuildAfterALayer, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    repro = repro_of(part.build(fix=False).failed_row(), part)
    text = repro.issue_text()
    assert "Torch-TensorRT fails to" not in text
    assert "Not verified: `repro.py` has not been run" in text
    assert BUILD_ERROR in text  # what hierviz's build said is still there, as hierviz's


@needs_rtx
def test_a_run_failure_only_at_a_profile_corner_says_where_it_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    model, x = made(AddsRowOne, 8, 4)
    part = hv.partition(model, x, min_block_size=1, dynamic_shapes=({0: Dim("batch", min=1, max=16)},))
    builds = part.build()
    assert builds.rows[0].at == "the profile's min (x: (1,4))"
    with pytest.raises(hv.ConfigError, match=r"fails in PyTorch only at the profile's min \(x: \(1,4\)\) of its "
                                             r"optimization profile, not because the lowering broke it"):
        builds.repro()


@needs_rtx
@pytest.mark.slow
def test_a_dynamic_graphs_repro_keeps_its_dim_range_and_fails_the_same_way(tmp_path, monkeypatch):
    registered_in_new_processes(monkeypatch, tmp_path / "site")
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    model, x = made(RefusesADynamicInput, 4, 8)
    part = hv.partition(model, x, min_block_size=1, dynamic_shapes=({0: Dim("batch", min=2, max=64)},))
    builds = part.build(fix=False)
    assert builds.rows[0].error == f"RuntimeError: {DYNAMIC_ERROR}"
    repro = repro_of(builds.failed_row(), part)
    assert repro.nodes == ("clamp",)
    saved = repro.save(tmp_path / "repro")
    assert saved.verified is True and saved.exit_status == 1 and saved.static_shapes == ""
    assert repr(saved).endswith("; verified: repro.py fails the same way in a fresh process>")
    ep = torch.export.load(str(tmp_path / "repro" / "repro.pt2"))
    assert [(int(r.lower), int(r.upper)) for r in ep.range_constraints.values()] == [(2, 64)]
    (placeholder,) = [n for n in ep.graph.nodes if n.op == "placeholder"]
    assert isinstance(placeholder.meta["val"].shape[0], torch.SymInt)
    readme = (tmp_path / "repro" / "README.md").read_text()
    assert readme.startswith("## Convert failure: ")
    assert "`repro.py` fails the same way in a fresh process" in readme
    assert "| `relu` | float32 | (batch, 8) | (1,8) → (4,8) → (64,8) |" in readme
    assert "- `batch`: 2 to 64 (the example's 4)" in readme


class Doubled(torch.nn.Module):
    """cat([x, x]) run in PyTorch, then relu and the test's clamp refusing a dynamic input: the
    engine's input is (2*batch, 8), a size that is no symbol of the capture's own."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(torch.cat([x, x]).relu(), min=DYNAMIC_MARK) * 2


@needs_rtx
@pytest.mark.slow
def test_a_size_that_is_a_multiple_of_a_dim_keeps_its_range_and_fails_the_same_way(tmp_path, monkeypatch):
    registered_in_new_processes(monkeypatch, tmp_path / "site")
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    part = hv.partition(Doubled().eval(), (torch.randn(4, 8),), min_block_size=1, torch_executed_ops={"aten.cat"},
                        dynamic_shapes=({0: Dim("batch", min=2, max=64)},))
    saved = repro_of(part.build(fix=False).failed_row(), part).save(tmp_path / "repro")
    assert saved.exit_status == 1 and saved.static_shapes == "", (tmp_path / "repro" / "repro.log").read_text()[-3000:]
    ep = torch.export.load(str(tmp_path / "repro" / "repro.pt2"))
    assert [(int(r.lower), int(r.upper)) for r in ep.range_constraints.values()] == [(4, 128)]
    readme = (tmp_path / "repro" / "README.md").read_text()
    assert "| `relu` | float32 | (size0, 8) | (4,8) → (8,8) → (128,8) |" in readme
    assert "- `size0`: 4 to 128 (the example's 8); it stands for `2*batch`, here a Dim of its own" in readme


@needs_rtx
@pytest.mark.slow
def test_a_dynamic_part_torch_export_cannot_keep_is_saved_static_and_says_it_did_not_reproduce(tmp_path,
                                                                                                  monkeypatch):
    registered_in_new_processes(monkeypatch, tmp_path / "site")
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    real = torch.export.export

    def refusing(*args, dynamic_shapes=None, **kwargs):  # as torch.export refuses a Dim the ops constrain
        if dynamic_shapes is not None:
            raise torch._dynamo.exc.UserError(torch._dynamo.exc.UserErrorType.CONSTRAINT_VIOLATION,
                                              "Constraints violated (batch)! batch must be specialized to 4")
        return real(*args, **kwargs)

    model, x = made(RefusesADynamicInput, 4, 8)
    part = hv.partition(model, x, min_block_size=1, dynamic_shapes=({0: Dim("batch", min=2, max=64)},))
    repro = repro_of(part.build(fix=False).failed_row(), part)
    monkeypatch.setattr(torch.export, "export", refusing)  # from here on: the capture above used torch.export too
    saved = repro.save(tmp_path / "repro")
    assert saved.verified is False and saved.exit_status == 0
    why = ("torch.export could not keep its dynamic dimensions (UserError: Constraints violated (batch)! batch must "
           "be specialized")
    assert saved.static_shapes.startswith(why)
    assert "; did not reproduce: repro.py builds it without the failure in a fresh process (repro.pt2 has static " \
           f"shapes: {why}" in repr(saved)
    readme = (tmp_path / "repro" / "README.md").read_text()
    assert readme.startswith("## Did not reproduce: ")
    assert "fails to convert" not in readme and f"repro.pt2 has static shapes: {why}" in readme
    ep = torch.export.load(str(tmp_path / "repro" / "repro.pt2"))
    assert not ep.range_constraints


@needs_rtx
@pytest.mark.slow
def test_a_repro_that_did_not_fail_says_so_and_never_claims_the_failure(tmp_path):
    model, x = made(RefusesToBuildAfterALayer, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    repro = repro_of(part.build(fix=False).failed_row(), part)
    builds = part_of(part.module._run_on_acc_tensorrt_0, ["add", "relu"])  # after the failing pair
    assert builds is not None
    saved = dataclasses.replace(repro, nodes=("add", "relu"), graph=builds).save(tmp_path)
    assert saved.verified is False and saved.exit_status == 0
    assert repr(saved).endswith("; did not reproduce: repro.py builds it without the failure in a fresh process "
                                "(see its repro.log)>")
    readme = (tmp_path / "README.md").read_text()
    assert readme.startswith("## Did not reproduce: ")
    assert "fails to build" not in readme and "fails to convert" not in readme
    assert "did not reproduce it: in a fresh process it builds" in readme
