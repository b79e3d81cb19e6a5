"""hierviz.trt: Torch-TensorRT imports and its registry is readable without a GPU; whether
TensorRT can build for a GPU (decided from the installed build-target table), conversion-only
settings, device normalisation, engine names and files, stable settings digests; without
torch_tensorrt, hierviz still works from the shipped snapshot."""

from __future__ import annotations

import importlib.metadata
import json
from importlib import resources

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.support import sources as support
from hierviz.foundation.opnames import qualname

needs_trt = pytest.mark.skipif(not trt.available(), reason=f"torch_tensorrt unusable: {trt.info().error}")


def _snapshot() -> dict:
    return json.loads(resources.files("hierviz.data").joinpath(support.SNAPSHOT_FILE).read_text())


@needs_trt
def test_registry_is_readable_without_gpu() -> None:
    targets = trt.converter_targets()
    names = {qualname(t) for t in targets}
    assert len(names) > 200
    for op in ("torch.ops.aten.convolution.default", "torch.ops.aten.relu.default",
               "torch.ops.aten.add.Tensor", "_operator.getitem"):
        assert op in names
    assert "torch.ops.aten.frac.default" not in names


@needs_trt
def test_info_reports_version_variant_and_cuda() -> None:
    info = trt.info()
    assert info.available and info.error is None
    assert info.cuda == torch.cuda.is_available()
    dist = {"standard": ("torch-tensorrt",), "rtx": ("torch-tensorrt-rtx", "torch_tensorrt_rtx")}
    assert info.variant in dist
    installed = {importlib.metadata.version(d) for d in dist[info.variant]
                 if _has_dist(d)}
    assert info.version.split("+")[0] in {v.split("+")[0] for v in installed}
    text = str(info)
    assert info.version in text and info.variant in text
    if not info.cuda:
        assert "no CUDA device" in text


def _has_dist(name: str) -> bool:
    try:
        importlib.metadata.version(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


@needs_trt
def test_cuda_functions_are_torchs_own_after_use() -> None:
    trt.converter_targets()
    trt.default_settings()
    for name in ("get_device_capability", "current_device"):
        fn = getattr(torch.cuda, name)
        assert fn.__module__.startswith("torch.cuda") and fn.__name__ == name


def test_cuda_answers_are_restored_after_an_error() -> None:
    before = torch.cuda.get_device_capability, torch.cuda.current_device
    with pytest.raises(RuntimeError, match="boom"):
        with trt.answer_cuda_queries():
            raise RuntimeError("boom")
    assert (torch.cuda.get_device_capability, torch.cuda.current_device) == before


@pytest.mark.slow  # over 5 s of CPU: left out of make check, run by make test
@needs_trt
def test_fresh_import_restores_cuda_functions(run_python) -> None:
    proc = run_python("""
        import threading
        import torch
        before = (torch.cuda.get_device_capability, torch.cuda.current_device)
        from hierviz import trt
        # two threads import at once (the explorer's worker runs jobs in threads): one at a time,
        # or the second saves the first's answers as torch's functions and leaves them in place
        both = [threading.Thread(target=trt.require) for _ in range(2)]
        for t in both:
            t.start()
        for t in both:
            t.join()
        assert len(trt.converter_targets()) > 200
        settings = trt.default_settings()
        assert settings.min_block_size == 5, settings.min_block_size
        after = (torch.cuda.get_device_capability, torch.cuda.current_device)
        assert after[0] is before[0] and after[1] is before[1], (before, after)
        print("OK", trt.info())
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK torch_tensorrt" in proc.stdout


@needs_trt
def test_snapshot_matches_installed_registry() -> None:
    data = _snapshot()
    if data["torch_tensorrt_version"] != str(trt.info().version):
        pytest.skip("snapshot made with another torch_tensorrt; run `make snapshot`")
    installed = {qualname(t) for t in trt.converter_targets()}
    # tests/building/failing_converters.py registers converters for its own ops (namespace hierviz_test) in
    # this process when a test of the same worker ran first; they are the tests', not Torch-TensorRT's
    installed = {op for op in installed if not op.startswith("torch.ops.hierviz_test.")}
    assert data["ops"] == sorted(installed)
    assert data["variant"] == trt.info().variant


def test_snapshot_file_is_well_formed() -> None:
    data = _snapshot()
    assert set(data) >= {"torch_tensorrt_version", "variant", "created_with_torch", "ops"}
    assert data["ops"] == sorted(set(data["ops"])) and len(data["ops"]) > 200
    assert "torch.ops.aten.convolution.default" in data["ops"]


_WITHOUT_TRT = """
    import sys
    {block}
    import torch
    import hierviz as hv
    from hierviz import trt
    from hierviz.support import sources as support
    info = trt.info()
    assert not info.available and info.error, info
    try:
        trt.require()
    except hv.TensorRTUnavailableError as exc:
        assert "pip install" in str(exc), exc
        print("REQUIRE", exc)
    else:
        raise SystemExit("require() did not raise")
    s = support.tensorrt()
    print("SOURCE", s.source, s.version)
    print("DESCRIPTION", s.description)
    assert not s.validate and not s.per_node  # the snapshot cannot validate
    assert s.accepts_name("torch.ops.aten.convolution.default")
    assert not s.accepts_name("torch.ops.aten.frac.default")
    gm = hv.capture(hv.zoo.load("tiny_conv")[0], hv.zoo.load("tiny_conv")[1])
    print("CAPTURED", sum(n.op == "call_function" for n in gm.graph.nodes))
"""


@pytest.mark.parametrize("how", ["sys_modules_none", "import_fails"])
def test_without_torch_tensorrt_hierviz_uses_snapshot(run_python, tmp_path, how) -> None:
    if how == "sys_modules_none":
        block, path_first = "sys.modules['torch_tensorrt'] = None", []
    else:
        fake = tmp_path / "torch_tensorrt"
        fake.mkdir()
        (fake / "__init__.py").write_text("raise ImportError('libnvinfer.so.10: cannot open shared object file')\n")
        block, path_first = "", [tmp_path]
    proc = run_python(_WITHOUT_TRT.format(block=block), path_first=path_first)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = proc.stdout
    version = _snapshot()["torch_tensorrt_version"]
    assert f"SOURCE snapshot {version}" in out
    assert (f"Torch-TensorRT {version} converter registry (snapshot; op names only: it cannot run the "
            "capability validators without torch_tensorrt installed)") in out
    if how == "import_fails":
        assert "libnvinfer" in out  # the real cause reaches the user
    else:
        assert "not installed" in out
    assert "CAPTURED" in out


# ----------------------------------------------------------------------------- can TensorRT build here?
# (checked on CPU with the build-target table of the installed package)
@needs_trt
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
@needs_trt
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


@needs_trt
def test_build_verdict_standard_and_no_gpu() -> None:
    assert trt.build_verdict("standard", (9, 0), None) is None
    assert trt.build_verdict("standard", (10, 0), None) is None
    assert "SM75 and newer" in trt.build_verdict("standard", (7, 0), None, gpu="V100")
    assert "no CUDA device" in trt.build_verdict("rtx", None, trt.build_targets())


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without a GPU")
@needs_trt
def test_info_without_gpu_cannot_build_and_says_why() -> None:
    info = trt.info()
    assert info.available and not info.cuda and not info.can_build
    assert "no CUDA device" in info.reason
    assert info.gpu is None and info.capability is None
    assert f"TensorRT {info.tensorrt_version}" in str(info) and info.to_dict()["summary"] == str(info)
    with pytest.raises(hv.TensorRTUnavailableError, match="cannot build engines here: no CUDA device"):
        trt.require_build()


@pytest.mark.parametrize("device", ["cuda:1", 1, torch.device("cuda", 1)])
@needs_trt
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
@needs_trt
def test_trt_settings_outside_conversion_are_refused_saying_where(field, value, where) -> None:
    with pytest.raises(hv.ConfigError) as caught:
        trt.conversion_settings({field: value})
    assert field in str(caught.value) and where in str(caught.value)


@needs_trt
def test_trt_settings_device_conflict_and_bad_values() -> None:
    with pytest.raises(hv.ConfigError, match="give the device once"):
        trt.conversion_settings({"device": "cuda:1"}, "cuda:0")
    with pytest.raises(hv.ConfigError, match="CUDA devices"):
        trt.conversion_settings({"device": "cpu"})
    with pytest.raises(hv.ConfigError, match="must be a dict"):
        trt.conversion_settings(["optimization_level"])


@pytest.mark.slow
@needs_trt
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


class _FakeEngineModule:
    def __init__(self, name: str) -> None:
        self.name, self.engine, self.setups = name, None, 0

    def setup_engine(self) -> None:
        self.setups += 1
        self.engine = object()


@needs_trt
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


@needs_trt
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
    with pytest.raises(Exception):  # noqa: B017 - TensorRT's own deserialization error, whatever its class
        trt.load_engine(tmp_path / "other.bin")
