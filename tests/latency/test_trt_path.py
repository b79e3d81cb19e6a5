"""The TensorRT path, checked on CPU: whether TensorRT can build for a GPU (from the installed
package's own build-target table), trt_settings validation, device normalisation, engine names
and lazy engine set-up, dynamic TensorRT inputs from a dynamic capture, stable settings digests,
and the refusal hv.measure gives when TensorRT cannot build here."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.latency import CompileCache
from hierviz.latency.lift import bake, lift, symbolic_shapes
from hierviz.latency.plan import plan

needs_trt = pytest.mark.skipif(not trt.available(), reason=f"torch_tensorrt unusable: {trt.info().error}")
pytestmark = needs_trt


# ----------------------------------------------------------------------------- availability
def test_rtx_build_targets_come_from_the_installed_package_and_lack_sm90() -> None:
    info = trt.info()
    if info.variant != "rtx":
        pytest.skip("checks the TensorRT-RTX table")
    import tensorrt

    listed = {name for name in tensorrt.ComputeCapability.__members__ if name.startswith("SM")}
    assert {f"SM{a}{b}" for a, b in trt.build_targets()} == listed
    assert (9, 0) not in trt.build_targets() and (8, 9) in trt.build_targets()
    assert info.targets == trt.build_targets()
    assert info.tensorrt_version == tensorrt.__version__


@pytest.mark.parametrize("capability,gpu,ok", [((9, 0), "NVIDIA H200", False), ((10, 0), "NVIDIA B200", False),
                                               ((8, 9), "NVIDIA L4", True), ((12, 0), "RTX 5090", True),
                                               ((8, 6), "RTX 3090", True)])
def test_build_verdict_with_the_rtx_table(capability, gpu, ok) -> None:
    if trt.info().variant != "rtx":
        pytest.skip("uses the installed TensorRT-RTX table")
    targets = trt.build_targets()
    why = trt.build_verdict("rtx", capability, targets, gpu=gpu, version="1.6")
    if ok:
        assert why is None
    else:
        sm = f"SM{capability[0]}{capability[1]}"
        assert gpu in why and sm in why and "SM89" in why  # what it is, and what the package builds for
        assert 'pip install "hierviz[tensorrt]"' in why and "pip uninstall torch-tensorrt-rtx" in why


def test_build_verdict_standard_and_no_gpu() -> None:
    assert trt.build_verdict("standard", (9, 0), None) is None
    assert trt.build_verdict("standard", (10, 0), None) is None
    assert "SM75 and newer" in trt.build_verdict("standard", (7, 0), None, gpu="V100")
    assert "no CUDA device" in trt.build_verdict("rtx", None, trt.build_targets())


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without a GPU")
def test_info_without_gpu_cannot_build_and_says_why() -> None:
    info = trt.info()
    assert info.available and not info.cuda and not info.can_build
    assert "no CUDA device" in info.reason
    assert info.gpu is None and info.capability is None
    assert f"TensorRT {info.tensorrt_version}" in str(info) and info.to_dict()["summary"] == str(info)
    with pytest.raises(hv.TensorRTUnavailableError, match="cannot build engines here: no CUDA device"):
        trt.require_build()


def test_measure_refuses_rtx_on_a_datacenter_gpu_before_compiling(tiny_conv, monkeypatch) -> None:
    """The decision hv.measure takes on an H200 with TensorRT-RTX (the GPU is simulated: the
    reason comes from build_verdict over the installed table)."""
    _, _, gm = tiny_conv
    part = hv.partition(gm, min_block_size=1)
    tags = [sg.tag for sg in part.subgraphs if sg.backend == "tensorrt"]
    real = trt.info()
    h200 = dataclasses.replace(real, cuda=True, gpu="NVIDIA H200", capability=(9, 0), can_build=False,
                               reason=trt.build_verdict("rtx", (9, 0), (((8, 9),)), gpu="NVIDIA H200"))
    monkeypatch.setattr(trt, "info", lambda device=None: h200)
    with pytest.raises(hv.TensorRTUnavailableError) as caught:
        plan(part, torch.device("cuda", 0))
    text = str(caught.value)
    assert all(tag in text for tag in tags) and "SM90" in text and 'pip install "hierviz[tensorrt]"' in text


# ----------------------------------------------------------------------------- settings
@pytest.mark.parametrize("device", ["cuda:1", 1, torch.device("cuda", 1)])
def test_conversion_settings_normalise_the_device_and_turn_tf32_off(device) -> None:
    s = trt.conversion_settings({"optimization_level": 5, "workspace_size": 1 << 28}, device)
    assert s.device.gpu_id == 1 and s.optimization_level == 5 and s.workspace_size == 1 << 28
    assert s.disable_tf32 is True
    assert trt.conversion_settings(None, device, tf32=True).disable_tf32 is False
    inside = trt.conversion_settings({"device": device}, None)
    assert inside.device.gpu_id == 1
    from torch_tensorrt import Device

    with trt.answer_cuda_queries():
        assert trt.conversion_settings({"device": Device(gpu_id=1)}).device.gpu_id == 1


@pytest.mark.parametrize("field,value,where", [
    ("decompose_attention", True, "lowering setting"),
    ("enable_autocast", True, "lowering setting"),
    ("min_block_size", 1, "hv.Config"),
    ("torch_executed_ops", set(), "hv.Config"),
    ("use_fast_partitioner", False, "partitioners"),
    ("cache_built_engines", True, "cache_dir"),
    ("reuse_cached_engines", True, "no effect"),
    ("dryrun", True, "Partition.report"),
    ("pass_through_build_failures", True, "on_error"),
    ("disable_tf32", False, "tf32=True/False"),
    ("enabled_precisions", {torch.float16}, "model.half()"),
    ("use_python_runtime", True, "one runtime"),
    ("use_explicit_typing", True, "strongly typed"),
    ("optimisation_level", 3, "did you mean optimization_level"),
])
def test_trt_settings_outside_conversion_are_refused_saying_where(field, value, where) -> None:
    with pytest.raises(hv.ConfigError) as caught:
        trt.conversion_settings({field: value})
    assert field in str(caught.value) and where in str(caught.value)


def test_trt_settings_device_conflict_and_bad_values() -> None:
    with pytest.raises(hv.ConfigError, match="give the device once"):
        trt.conversion_settings({"device": "cuda:1"}, "cuda:0")
    with pytest.raises(hv.ConfigError, match="CUDA devices"):
        trt.conversion_settings({"device": "cpu"})
    with pytest.raises(hv.ConfigError, match="must be a dict"):
        trt.conversion_settings(["optimization_level"])


def test_measure_checks_trt_settings_even_without_tensorrt_subgraphs(tiny_conv) -> None:
    _, x, gm = tiny_conv
    part = hv.partition(gm, priority=("inductor",), support={"inductor": hv.support.inductor()}, min_block_size=1)
    with pytest.raises(hv.ConfigError, match="min_block_size.*hv.Config"):
        hv.measure(part, x, trt_settings={"min_block_size": 1}, cache=CompileCache(), warmup=0, iters=1)


@pytest.mark.slow
def test_settings_digest_is_the_same_in_another_process(run_python) -> None:
    settings = trt.conversion_settings({"optimization_level": 4, "workspace_size": 1 << 26}, 0)
    here = trt.settings_digest(settings)
    proc = run_python("""
        from hierviz import trt
        s = trt.conversion_settings({"workspace_size": 1 << 26, "optimization_level": 4}, 0)
        print("DIGEST", trt.settings_digest(s))
    """, env={"PYTHONHASHSEED": "12345"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"DIGEST {here}" in proc.stdout
    other = trt.conversion_settings({"optimization_level": 3, "workspace_size": 1 << 26}, 0)
    assert trt.settings_digest(other) != here
    assert trt.settings_digest(trt.conversion_settings(None, 0, tf32=True)) != trt.settings_digest(
        trt.conversion_settings(None, 0))
    key = trt.settings_key(settings)
    import tensorrt

    assert key == ("tensorrt", tensorrt.__version__, here)


# ----------------------------------------------------------------------------- engines
class _FakeEngineModule:
    def __init__(self, name: str) -> None:
        self.name, self.engine, self.setups = name, None, 0

    def setup_engine(self) -> None:
        self.setups += 1
        self.engine = object()


def test_compile_submodule_names_the_engine_uses_the_device_and_sets_up_lazy_engines(monkeypatch) -> None:
    """Upstream's conversion is replaced by a recorder (it needs a GPU); what hierviz hands it is checked."""
    import torch_tensorrt.dynamo.conversion as conversion

    seen = {}

    def fake_convert(gm, inputs, settings=None, name=""):
        seen.update(inputs=inputs, settings=settings, name=name)
        return _FakeEngineModule(name)

    monkeypatch.setattr(conversion, "convert_module", fake_convert)
    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            n.meta["val"] = torch.zeros(2, 3)
    settings = trt.conversion_settings({"lazy_engine_init": True}, "cuda:1")
    module = trt.compile_submodule(gm, settings, name="_run_on_acc_tensorrt_3")
    assert seen["name"] == "_run_on_acc_tensorrt_3" and seen["settings"].device.gpu_id == 1
    assert module.setups == 1 and module.engine is not None  # upstream's lazy path would leave it unset
    assert [tuple(i.shape) for i in seen["inputs"]] == [(2, 3)] and not trt.is_dynamic(seen["inputs"][0])


def test_builder_passes_the_subgraph_tag_to_named_compilers(tiny_conv) -> None:
    _, x, gm = tiny_conv
    names = []

    def compile_fn(g, inputs, options, persist, name=""):
        names.append(name)
        return g

    comp = hv.latency.Compiler(backend="named", compile=compile_fn, lifts_weights=False, named=True)
    part = hv.partition(gm, priority=("named",), min_block_size=1,
                        support={"named": hv.support.ops(["torch.ops.aten.relu.default"])})
    m = hv.measure(part, x, compilers={"named": comp}, cache=CompileCache(), warmup=0, iters=1, per_subgraph=False)
    tags = [sg.tag for sg in part.subgraphs if sg.backend == "named"]
    assert names == tags and m.outputs_match is True


def test_engine_files_go_through_the_documented_state(tmp_path) -> None:
    from torch_tensorrt.dynamo.runtime import TorchTensorRTModule

    with trt.answer_cuda_queries():
        module = TorchTensorRTModule(name="_run_on_acc_tensorrt_0")
    path = tmp_path / "engine.bin"
    trt.save_engine(module, path)
    saved = torch.load(path, weights_only=False)
    assert saved["format"] == "hierviz-tensorrt-v1" and "_extra_state" in saved["state"]
    with trt.answer_cuda_queries():
        back = trt.load_engine(path)
    assert isinstance(back, TorchTensorRTModule) and back.name == "_run_on_acc_tensorrt_0"
    (tmp_path / "other.bin").write_bytes(b"not an engine")
    with pytest.raises(Exception):
        trt.load_engine(tmp_path / "other.bin")


# ----------------------------------------------------------------------------- dynamic shapes
class _Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) + 1


def _trt_inputs(gm: torch.fx.GraphModule, x: torch.Tensor) -> tuple[list, tuple]:
    part = hv.partition(gm, min_block_size=1)
    (tag,) = [sg.tag for sg in part.subgraphs if sg.backend == "tensorrt"]
    lifted = lift(getattr(part.module, tag), keep_meta=True)  # as hv.measure does for TensorRT
    return trt.submodule_inputs(bake(lifted, (x,))), symbolic_shapes(lifted.gm)


def test_dynamic_capture_gives_dynamic_tensorrt_inputs() -> None:
    x = torch.randn(4, 8)
    batch = torch.export.Dim("batch", min=2, max=16)
    gm = hv.capture(_Mlp().eval(), (x,), dynamic_shapes=({0: batch},))
    inputs, shapes = _trt_inputs(gm, x)
    (inp,) = inputs
    assert trt.is_dynamic(inp)
    assert inp.shape["opt_shape"] == (4, 8) and inp.shape["max_shape"] == (16, 8)
    assert inp.shape["min_shape"][0] <= 2 and inp.shape["min_shape"][1] == 8
    assert shapes and shapes[0][2][0][2] == "16"  # the range is part of the compile-cache key


def test_static_capture_gives_static_tensorrt_inputs() -> None:
    x = torch.randn(4, 8)
    inputs, shapes = _trt_inputs(hv.capture(_Mlp().eval(), (x,)), x)
    assert not trt.is_dynamic(inputs[0]) and tuple(inputs[0].shape) == (4, 8) and shapes == ()
