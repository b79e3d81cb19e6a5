"""part.build() on models written to stop at each stage: run (the lowered graph fails in
PyTorch, on both irs), convert, build, and built. Each asserts the stage, the node, the
error's first line and what Torch-TensorRT then runs. The convert and build failures are the
test's own (tests/building/failing_converters.py), so they hold on any TensorRT."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import trt
from tests.building.failing_converters import BUILD_ERROR, CONVERT_ERROR, RefusesToBuild, RefusesToConvert
from tests.building.models import ConvNet, LastRowWrite, NormBetween, made

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")

SLICE_ERROR = ("RuntimeError: expected src to have a size equal to the slice of self. src size = [2, 1, 4], "
               "slice size = [2, 0, 4]")


def only_row(builds: hv.Builds) -> dict:
    assert len(builds.df) == 1
    return builds.df.iloc[0].to_dict()


def test_a_lowering_that_breaks_the_graph_stops_at_run_with_the_users_line():
    model, x = made(LastRowWrite, 2, 3, 4)
    part = hv.partition(model, x, min_block_size=1)
    builds = part.build()
    row = only_row(builds)
    assert (row["stage"], row["node"], row["error"]) == ("run", "slice_scatter", SLICE_ERROR)
    assert row["source"].endswith("models.py:20: h[:, -1] = h[:, 0] * 2  # the line the run failure names")
    # Torch-TensorRT never runs the graph; its converter then fails with a ValueError, which
    # torch_tensorrt.compile lets through
    assert row["runs_instead"].startswith("torch_tensorrt.compile raises ValueError: the model is not compiled")
    assert not builds.ok
    assert "failed at run: " + SLICE_ERROR in repr(builds)


def test_the_same_lowering_on_torch_compile_raises_backend_compiler_failed():
    model, x = made(LastRowWrite, 2, 3, 4)
    builds = hv.partition(model, x, min_block_size=1, ir="torch_compile").build()
    row = only_row(builds)
    assert (row["graph"], row["stage"], row["node"], row["error"]) == ("g0", "run", "slice_scatter", SLICE_ERROR)
    assert row["runs_instead"].startswith("torch.compile raises BackendCompilerFailed: Torch-TensorRT's backend "
                                          "catches only AssertionError, RuntimeError, TypeError, not ValueError")
    assert "test_build_stages.py" not in row["source"] and "models.py:" in row["source"]


def test_a_converter_failure_names_the_node_and_what_each_ir_runs():
    model, x = made(NormBetween, 2, 16)
    part = hv.partition(model, x, min_block_size=1, torch_executed_ops={"_operator.getitem"})
    builds = part.build(fix=False)
    first = builds.df.iloc[0].to_dict()
    assert (first["stage"], first["node"]) == ("convert", None)
    # the LayerNorm's (out, None, None) leaves the engine: Torch-TensorRT finds no shapes to read for its
    # outputs before it converts (interpret_module_to_result), as torch_tensorrt.compile would say
    assert first["error"] == ("RuntimeError: Failed to extract symbolic shape expressions from source FX graph "
                              "partition")
    assert first["runs_instead"] == "torch_tensorrt.compile raises RuntimeError: the model is not compiled"
    assert first["fix"] is None  # fix=False: no search
    on_compile = hv.partition(model, x, min_block_size=1, torch_executed_ops={"_operator.getitem"},
                              ir="torch_compile").build(fix=False)
    row = on_compile.df.iloc[0].to_dict()
    assert row["stage"] == "convert"
    assert row["runs_instead"].startswith("torch.compile runs the whole of graph g0 eagerly in PyTorch "
                                          "(Torch-TensorRT's backend catches the RuntimeError")


def test_a_converter_that_raises_names_its_node_and_a_fix_that_builds():
    model, x = made(RefusesToConvert, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    builds = part.build()
    row = only_row(builds)
    assert (row["stage"], row["node"], row["error"]) == ("convert", "/clamp", CONVERT_ERROR)
    assert row["runs_instead"] == "torch_tensorrt.compile raises RuntimeError: the model is not compiled"
    assert builds.fix == {"aten.clamp"}
    assert row["fix"].startswith("torch_executed_ops=['aten.clamp']: every engine builds")
    assert hv.partition(model, x, min_block_size=1, torch_executed_ops=builds.fix).build().ok


def test_a_builder_failure_gives_tensorrts_error_and_a_fix_that_builds():
    model, x = made(RefusesToBuild, 2, 8)
    part = hv.partition(model, x, min_block_size=1)
    builds = part.build()
    row = only_row(builds)
    assert row["stage"] == "build" and row["node"] is None and row["layers"] > 0
    assert BUILD_ERROR in row["details"] and "IAssertionLayer" in row["details"]
    assert row["runs_instead"] == "torch_tensorrt.compile raises RuntimeError: the model is not compiled"
    assert builds.fix == {"aten.clamp"}
    assert row["fix"].startswith("torch_executed_ops=['aten.clamp']: every engine builds")
    fixed = hv.partition(model, x, min_block_size=1, torch_executed_ops=builds.fix).build()
    assert fixed.ok and len(fixed.df) == 2 and set(fixed.df["stage"]) == {"built"}


def test_a_builder_failure_names_the_builders_error_not_the_missing_gpu():
    row = only_row(hv.partition(*made(RefusesToBuild, 2, 8), min_block_size=1).build(fix=False))
    assert row["error"].startswith("IBuilder::buildSerializedNetwork") and "IAssertionLayer" in row["error"]


def test_an_engine_that_builds_says_its_layers_and_bytes():
    model, x = made(ConvNet, 1, 3, 16, 16)
    builds = hv.partition(model, x, min_block_size=1).build()
    row = only_row(builds)
    assert row["stage"] == "built" and row["layers"] > 0 and row["engine_bytes"] > 0
    assert row["node"] is None and row["error"] is None and row["runs_instead"] is None and row["fix"] is None
    assert builds.ok
    mb = row["engine_bytes"] / 1e6
    assert repr(builds).startswith(f"<hv.Builds: 1/1 engines built, {mb:.1f} MB" if mb < 10 else f"{mb:.0f} MB")
    assert builds.where().startswith(f"{trt.builder_name()}, ahead of time on the CPU; a standard TensorRT build")


def test_build_arguments_are_checked():
    model, x = made(ConvNet, 1, 3, 16, 16)
    part = hv.partition(model, x, min_block_size=1)
    with pytest.raises(hv.ConfigError, match=r"build\(fix=...\) is True or False"):
        part.build(fix="yes")
    with pytest.raises(hv.ConfigError, match="trt_settings"):
        part.build(trt_settings={"min_block_size": 3})
    with pytest.raises(hv.ConfigError, match=r"build\(trt_settings=...\) is a dict of Torch-TensorRT"):
        part.build(trt_settings="fast")
    with pytest.raises(hv.ConfigError, match="part.build: input 'x' has 1 dimension"):
        part.build(example_inputs=(torch.randn(3),))
    with pytest.raises(hv.ConfigError):
        part.build(nope=1)


def test_one_graph_of_torch_compiles_path_answers_for_that_path():
    model, x = made(LastRowWrite, 2, 3, 4)
    mp = hv.partition(model, x, min_block_size=1, ir="torch_compile")
    row = only_row(mp.graphs[0].build())
    assert (row["stage"], row["node"], row["error"]) == ("run", "slice_scatter", SLICE_ERROR)
    assert row["runs_instead"].startswith("torch.compile raises BackendCompilerFailed")


def test_the_graph_runs_in_pytorch_beside_tensorrts_build(tmp_path, monkeypatch):
    """The run stage uses the CPU TensorRT's builder leaves: it runs on a thread of its own while
    the builder works; the build returns with the engine kept and the run's verdict."""
    import threading

    from hierviz.building.subgraph_builds import SubgraphBuilder
    from hierviz.foundation import writes_behind
    from hierviz.trt import engine_builder

    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    building, built, ran, seen = threading.Event(), threading.Event(), threading.Event(), []
    real_run, real_serialize = SubgraphBuilder.run, engine_builder.serialize_engine

    def run(self, graph, inputs):
        seen.append((building.wait(10), not built.is_set()))  # TensorRT's build started and under way
        try:
            return real_run(self, graph, inputs)
        finally:
            ran.set()

    def serialize(*args, **kwargs):
        building.set()
        ran.wait(10)  # the builder starts once the graph ran beside it (or 10 s on)
        try:
            return real_serialize(*args, **kwargs)
        finally:
            built.set()

    monkeypatch.setattr(SubgraphBuilder, "run", run)
    monkeypatch.setattr(engine_builder, "serialize_engine", serialize)
    part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    builds = part.build(fix=False)
    assert seen == [(True, True)]
    assert builds.ok and only_row(builds)["stage"] == "built"
    writes_behind.wait_all()  # the engine is put in place after build() returned
    (engine,) = (tmp_path / "builds").glob("*.engine")
    assert engine.stat().st_size == builds.engine_bytes


HEARD_CUDA: list[object] = []


def _capability() -> object:
    """What torch says of the GPU's compute capability here (its error's class without one)."""
    try:
        return torch.cuda.get_device_capability()
    except (AssertionError, RuntimeError) as exc:
        return type(exc).__name__


@torch.library.custom_op("hvtest_build_stages::warns", mutates_args=())
def _warns(x: torch.Tensor) -> torch.Tensor:
    """A custom op (no converter: it runs in PyTorch) that warns and notes what torch says of the GPU."""
    import warnings

    warnings.warn("hvtest: the lowered graph ran", UserWarning, stacklevel=1)
    HEARD_CUDA.append(_capability())
    return x * 2


@_warns.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class WarnsBetween(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(torch.ops.hvtest_build_stages.warns(self.first(x).relu())).relu()


def test_the_graph_run_beside_a_build_warns_the_user_and_sees_cuda_as_it_is(tmp_path, monkeypatch):
    """The run's own warnings are not Torch-TensorRT's (they reach the user, not Builds.notes), and
    it is not told of the GPU Torch-TensorRT's conversion is told of on a machine without one (the
    compute capability hierviz answers while Torch-TensorRT converts)."""
    import warnings

    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    part = hv.partition(WarnsBetween().eval(), torch.randn(2, 8), min_block_size=1)
    assert [sg.backend for sg in part.subgraphs] == ["tensorrt", "torch", "tensorrt"]
    HEARD_CUDA.clear()
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")
        builds = part.build(fix=False)
    assert builds.ok
    assert [str(w.message) for w in heard if "hvtest" in str(w.message)] == ["hvtest: the lowered graph ran"]
    assert not any("hvtest" in note for note in builds.notes)
    assert HEARD_CUDA == [_capability()]
