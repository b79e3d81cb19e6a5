"""hierviz.trt: Torch-TensorRT imports and its registry is readable without a GPU; without
torch_tensorrt, hierviz still works from the shipped snapshot."""

from __future__ import annotations

import importlib.metadata
import json
from importlib import resources

import pytest
import torch

import hierviz as hv
from hierviz import support, trt
from hierviz.opnames import qualname

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


@needs_trt
def test_fresh_import_restores_cuda_functions(run_python) -> None:
    proc = run_python("""
        import torch
        before = (torch.cuda.get_device_capability, torch.cuda.current_device)
        from hierviz import trt
        trt.require()
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
    assert data["ops"] == sorted({qualname(t) for t in trt.converter_targets()})
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
    from hierviz import trt, support
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
    assert f"Torch-TensorRT {version} converter registry (snapshot)" in out
    if how == "import_fails":
        assert "libnvinfer" in out  # the real cause reaches the user
    else:
        assert "not installed" in out
    assert "CAPTURED" in out
