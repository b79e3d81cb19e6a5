"""The smallest failing part of a failed engine (repro_of) and its standalone repro (Repro.save):
a converter failure the test makes itself, a builder failure the test makes itself that needs two
nodes (tests/building/failing_converters.py, registered in repro.py's fresh process too), a
converter's failure on a LayerNorm's tuple, and such a builder failure placed inside the zoo's
gpt2. None depends on a bug of TensorRT's builder."""

from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.building.reduction import part_of, signature
from hierviz.building.repro import repro_of
from tests.building.failing_converters import (BUILD_ERROR, PAIR_MARK, RefusesToBuildAfterALayer, clamped_after,
                                               registered_in_new_processes)
from tests.building.models import ConvNet, FusedQKV, NormBetween, made

needs_rtx = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                               reason="needs TensorRT-RTX, which builds engines on the CPU")

# the start of the error TensorRT's builder gives for the test's assertion (failing_converters.py), as a repro says it
ASSERTION = "IBuilder::buildSerializedNetwork: Error Code 4: API Usage..."


def test_the_signature_masks_node_names_numbers_and_addresses():
    a = signature("convert", "RuntimeError", "refused aten.split at node split_3 (size 768, at 0x7f3a)", ["split_3"])
    b = signature("convert", "RuntimeError", "refused aten.split at node split (size 12, at 0x1b)", ["split"])
    assert a == b == ("convert", "RuntimeError", "refused aten.split at node <node> (size #, at <address>)", False)
    assert signature("build", "RuntimeError", "x", []) != signature("convert", "RuntimeError", "x", [])
    assert signature("convert", "TypeError", "x", []) != signature("convert", "RuntimeError", "x", [])


def _refusing_split(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """convert_and_build refuses every graph holding aten.split (as a converter would); the
    calls that reached it are counted."""
    real = trt.convert_and_build
    calls: list[int] = []

    def refusing(gm: torch.fx.GraphModule, settings: object = None, **options: object) -> trt.EngineBuild:
        calls.append(1)
        if any(n.target is torch.ops.aten.split.Tensor for n in gm.graph.nodes):
            return trt.EngineBuild("convert", None, 0.0, None, node="split_3", exception="RuntimeError",
                                   error="refused aten.split at node split_3")
        return real(gm, settings, **options)

    monkeypatch.setattr(trt, "convert_and_build", refusing)
    return calls


@needs_rtx
def test_a_refused_split_reduces_to_the_split_node_and_a_second_search_builds_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))  # the refusals are kept in a cache of their own
    calls = _refusing_split(monkeypatch)
    model, x = made(FusedQKV, 1, 16, 64)
    part = hv.partition(model, x, min_block_size=1)
    builds = part.build(fix=False)
    assert builds.rows[0].stage == "convert"
    repro = repro_of(builds.failed_row(), part)
    assert repro.nodes == ("split",)
    assert [n.op for n in repro.graph.graph.nodes] == ["placeholder", "call_function", "output"]
    assert (repro.stage, repro.exception, repro.error) == ("convert", "RuntimeError",
                                                           "refused aten.split at node split_3")
    assert repr(repro) == (f"<hv.Repro: 1 of 16 nodes of _run_on_acc_tensorrt_0 fail at convert (refused aten.split "
                           f"at node split_3), found in {repro.builds} builds ({repro.cached} from the build cache)>")
    assert repro.verified is None and 1 < repro.builds < 40
    before = len(calls)
    again = repro_of(builds.failed_row(), part)  # every trial is in the build cache
    assert len(calls) == before and again.nodes == repro.nodes and again.cached == again.builds == repro.builds


@needs_rtx
def test_a_builder_failure_reduces_to_the_nodes_it_needs():
    model, x = made(RefusesToBuildAfterALayer, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    repro = repro_of(part.build(fix=False).failed_row(), part)
    assert repro.nodes == ("addmm", "clamp")  # the clamp alone builds: the failure needs the addmm too
    assert repro.stage == "build" and BUILD_ERROR in repro.error and "IAssertionLayer" in repro.error
    assert repr(repro).startswith(f"<hv.Repro: 2 of 4 nodes of _run_on_acc_tensorrt_0 fail at build ({ASSERTION}), "
                                  "found in ")
    # the add after them is gone: its inputs, the addmm's and the clamp's values, are the part's outputs
    assert [n.name for n in repro.graph.graph.output_node().args[0]] == ["addmm", "clamp"]


@needs_rtx
def test_repro_of_says_what_it_needs():
    model, x = made(ConvNet, 1, 3, 16, 16)
    part = hv.partition(model, x, min_block_size=1)
    with pytest.raises(hv.ConfigError, match="no engine failed to convert or build, and no lowered graph failed "
                                             "in PyTorch, so there is nothing to reproduce"):
        repro_of(part.build().failed_row(), part)
    model, x = made(RefusesToBuildAfterALayer, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    builds = part.build(fix=False)
    with pytest.raises(hv.ConfigError, match=r"'_run_on_acc_tensorrt_9'\): that subgraph did not fail .* "
                                             r"the ones that did: _run_on_acc_tensorrt_0"):
        repro_of(builds.failed_row("_run_on_acc_tensorrt_9"), part)
    repro = repro_of(builds.failed_row(), part)
    with pytest.raises(hv.ConfigError, match=r"weights=...\) is 'real' .* or 'random'"):
        repro.save("unused", weights="zeros")


def _imports(path: object) -> set[str]:
    tree = ast.parse(open(str(path)).read())
    found = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return found | {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


@needs_rtx
@pytest.mark.slow
def test_the_saved_repro_of_a_builder_failure_fails_the_same_way_in_a_fresh_process(tmp_path, monkeypatch):
    registered_in_new_processes(monkeypatch, tmp_path / "site")
    model, x = made(RefusesToBuildAfterALayer, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    repro = repro_of(part.build(fix=False).failed_row(), part)
    saved = repro.save(tmp_path / "pair")
    assert saved.verified is True and repro.verified is None  # save returns the verified one
    assert repr(saved).endswith("; verified: repro.py fails the same way in a fresh process>")
    folder = tmp_path / "pair"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "repro.log", "repro.pt2", "repro.py"]
    assert _imports(folder / "repro.py") - set(sys.stdlib_module_names) == {"torch", "torch_tensorrt"}
    log = (folder / "repro.log").read_text()
    assert "Reproduced: the same failure." in log and "Failed at build with RuntimeError: " in log
    readme = (folder / "README.md").read_text()
    assert readme == saved.issue_text() and repro.error in readme and "builder: TensorRT-RTX" in readme
    assert "- `clamp`: `aten.clamp.default`, from `" in readme
    assert re.search(r"failing_converters\.py:\d+: return \(y \+ torch\.clamp\(y, min=PAIR_MARK\)\)\.relu\(\)", readme)
    ep = torch.export.load(str(folder / "repro.pt2"))
    assert torch.equal(ep.state_dict["part.w"], model.w.detach())


@needs_rtx
@pytest.mark.slow
def test_random_weights_keep_shapes_and_the_failure_and_leave_the_models_alone(tmp_path, monkeypatch):
    registered_in_new_processes(monkeypatch, tmp_path / "site")
    model, x = made(RefusesToBuildAfterALayer, 2, 8)
    kept = model.w.detach().clone()
    part = hv.partition(model, x, min_block_size=1)
    saved = repro_of(part.build(fix=False).failed_row(), part).save(tmp_path / "repro", weights="random")
    assert saved.verified is True
    w = torch.export.load(str(tmp_path / "repro" / "repro.pt2")).state_dict["part.w"]
    assert w.shape == model.w.shape and w.dtype == model.w.dtype and not torch.equal(w, kept)
    assert torch.equal(model.w.detach(), kept)


@needs_rtx
@pytest.mark.slow
def test_a_part_that_builds_exits_0_without_a_gpu(tmp_path):
    model, x = made(RefusesToBuildAfterALayer, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    repro = repro_of(part.build(fix=False).failed_row(), part)
    builds = part_of(part.module._run_on_acc_tensorrt_0, ["add", "relu"])  # after the failing pair
    assert builds is not None
    saved = dataclasses.replace(repro, nodes=("add", "relu"), graph=builds).save(tmp_path)
    assert saved.verified is False and "did not reproduce: repro.py builds it" in repr(saved)
    done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0
    expected = ("It builds: the engine was built, and loading it failed for lack of a GPU." if not
                torch.cuda.is_available() else "It builds.")
    assert expected in done.stdout


@needs_rtx
def test_a_converter_failure_on_a_layernorms_tuple_reduces_to_the_layernorm():
    model, x = made(NormBetween, 2, 16)
    part = hv.partition(model, x, min_block_size=1, torch_executed_ops={"_operator.getitem"})
    repro = repro_of(part.build(fix=False).failed_row(), part)
    assert (repro.stage, repro.error) == ("convert", "RuntimeError: Failed to extract symbolic shape expressions "
                                                     "from source FX graph partition")
    assert repro.nodes == ("native_layer_norm",)
    assert repro.settings["torch_executed_ops"] == ["_operator.getitem"]
    assert "torch_executed_ops=['_operator.getitem']" in repro.issue_text()


@needs_rtx
@pytest.mark.slow
def test_a_builder_failure_inside_gpt2_reduces_to_the_two_nodes_it_needs_and_is_verified(tmp_path, monkeypatch):
    registered_in_new_processes(monkeypatch, tmp_path / "site")
    model, x = hv.zoo.load("gpt2")  # a model of its own: the zoo_cache fixture's is shared
    clamped_after(model.model.transformer.h[0].mlp)  # the first block's MLP ends in the test's failing clamp
    part = hv.partition(model, x, min_block_size=3)
    builds = part.build(fix=False)
    (row,) = [r for r in builds.rows if r.stage != "built"]
    gm = getattr(part.module, row.subgraph)
    (clamp,) = [n for n in gm.graph.nodes if n.target is torch.ops.aten.clamp.default and n.args[1] == PAIR_MARK]
    repro = repro_of(builds.failed_row(), part)
    assert repro.stage == "build" and BUILD_ERROR in repro.error and repro.of > 50
    assert repro.nodes == (clamp.args[0].name, clamp.name)  # the clamp and the reshape ending the MLP's c_proj
    assert repro.save(tmp_path / "repro").verified is True


def _refusing_tuple_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """convert_and_build refuses a graph returning a tuple-valued node (a LayerNorm's whole
    (out, mean, rstd)) as torch_tensorrt.dynamo.compile does before converting anything: it finds
    no symbolic shape for that output."""
    real = trt.convert_and_build

    def refusing(gm: torch.fx.GraphModule, settings: object = None, **options: object) -> trt.EngineBuild:
        outputs = gm.graph.output_node().args[0]
        outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
        if any(isinstance(o, torch.fx.Node) and isinstance(o.meta.get("val"), tuple) for o in outputs):
            return trt.EngineBuild("convert", None, 0.0, None, exception="RuntimeError", error=TUPLE)
        return real(gm, settings, **options)

    monkeypatch.setattr(trt, "convert_and_build", refusing)


TUPLE = "RuntimeError: Failed to extract symbolic shape expressions from source FX graph partition"


@needs_rtx
@pytest.mark.slow
def test_a_layernorms_tuple_at_an_engines_edge_is_verified_as_torch_tensorrts_compile_fails(monkeypatch, tmp_path):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))  # the refusals are kept in a cache of their own
    _refusing_tuple_outputs(monkeypatch)
    model, x = made(NormBetween, 2, 16)
    part = hv.partition(model, x, min_block_size=1, torch_executed_ops={"_operator.getitem"})
    repro = repro_of(part.build(fix=False).failed_row(), part)
    assert repro.nodes == ("native_layer_norm",) and repro.error == TUPLE
    out = repro.graph.graph.output_node().args[0]  # the tuple whole, as the subgraph returns it
    assert isinstance(out, torch.fx.Node) and out.name == "native_layer_norm"
    saved = repro.save(tmp_path / "norm")
    assert saved.verified is True
    log = (tmp_path / "norm" / "repro.log").read_text()
    assert f"Failed at convert with {TUPLE}" in log and "Reproduced: the same failure." in log


class ConstAttention(torch.nn.Module):
    """Attention whose q, k and v are weights: constant-folded, the converter hands TensorRT a
    torch.Tensor where pybind wants an ITensor ("incompatible function arguments", whose "Invoked
    with: ..." comes lines after the message's first)."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.q, self.k, self.v = (torch.nn.Parameter(torch.randn(1, 2, 4, 8, generator=gen)) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(self.q, self.k, self.v) + x


@needs_rtx
@pytest.mark.slow
def test_a_pybind_argument_failure_is_verified_by_the_words_below_its_first_line(tmp_path):
    part = hv.partition(ConstAttention().eval(), (torch.randn(1, 2, 4, 8),), min_block_size=1)
    repro = repro_of(part.build(fix=False).failed_row(), part)
    assert repro.nodes == ("scaled_dot_product_attention",) and repro.exception == "TypeError"
    assert "incompatible function arguments; invoked with: <INetworkDefinition>" in repro.error
    assert repro.save(tmp_path).verified is True
    assert "Reproduced: the same failure." in (tmp_path / "repro.log").read_text()



def test_a_line_cut_short_is_the_same_failure_wherever_its_sizes_move_the_cut():
    """error_line keeps 200 characters: a size with more digits before the cut moves it, and two
    copies of one failure must still match (before, the search took them for two failures)."""
    from hierviz.building.reduction import same_failure
    from hierviz.trt.build_errors import informative_line

    def line(size: int) -> tuple[str, bool]:
        return informative_line(f"RuntimeError: layer ({size}) refused: " + "the operand shapes disagree " * 10)

    (small, small_cut), (big, big_cut) = line(7), line(12288)
    assert small_cut and big_cut and small.endswith("…") and big.endswith("…") and small != big
    a = signature("build", "RuntimeError", small, [], small_cut)
    b = signature("build", "RuntimeError", big, [], big_cut)
    assert a.cut and b.cut and same_failure(a, b) and same_failure(b, a)
    x_line, x_cut = informative_line("RuntimeError: layer (7) refused: " + "x " * 150)
    other = signature("build", "RuntimeError", x_line, [], x_cut)
    assert not same_failure(a, other)
    assert not same_failure(a, signature("convert", "RuntimeError", small, [], small_cut))
    whole = signature("build", "RuntimeError", "RuntimeError: layer (7) refused", [])
    assert not whole.cut and not same_failure(whole, a)  # a whole line is not the start of a longer one


def test_a_whole_line_that_ends_in_an_ellipsis_is_not_taken_for_a_cut_one():
    """Whether a line was cut is the build's record (EngineBuild.error_cut), never read from its
    text: a message of TensorRT's own that ends in "…" is whole, so a longer one that starts with
    it is another failure, and a line is cut after its last whole word."""
    from hierviz.building.reduction import same_failure
    from hierviz.trt.build_errors import informative_line

    waiting = signature("build", "RuntimeError", "RuntimeError: waiting for the tactic…", [])
    longer = signature("build", "RuntimeError", "RuntimeError: waiting for the tactic… then layer 3 gave up", [])
    assert not waiting.cut and not same_failure(waiting, longer)
    text, cut = informative_line("RuntimeError: " + "abcdefghij " * 30)
    assert cut and len(text) <= 200 and text.endswith("abcdefghij…")
