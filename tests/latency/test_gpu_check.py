"""benchmarks/gpu_check.py without a GPU: it reports the environment and stops cleanly with
its no-CUDA exit status; its configs give the splits it promises (TensorRT only; TensorRT +
TorchInductor + eager); a row where a subgraph fell back is counted as a TensorRT problem."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

import hierviz as hv
from hierviz.latency import CompileCache

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_without_cuda_it_reports_and_exits_3(tmp_path) -> None:
    import subprocess

    out = tmp_path / "gpu_check.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    text = proc.stdout
    assert text.index("environment:") < text.index("no CUDA device: gpu_check needs an NVIDIA GPU")
    assert "torch_tensorrt" in text and "nothing was measured" in text
    report = json.loads(out.read_text())
    assert report["verdict"] == "no CUDA device" and report["results"] == []
    assert report["environment"]["tensorrt"]["can_build"] is False


@pytest.mark.skipif(not hv.trt.available(), reason="the TensorRT configs need torch_tensorrt's registry")
def test_configs_give_tensorrt_only_and_mixed_splits(gpu_check, tiny_conv, bert) -> None:
    for _, _, gm in (tiny_conv, bert):
        cfgs = dict(gpu_check.configs(hv, gm, trt_ok=True))
        assert list(cfgs) == ["tensorrt", "compile", "mixed", "inductor"]
        compiled = hv.partition(gm, **cfgs["compile"])
        assert compiled.engine == "fast" and {sg.backend for sg in compiled.subgraphs} <= {"tensorrt", "torch"}
        assert "tensorrt" in {sg.backend for sg in compiled.subgraphs}
        trt_only = {sg.backend for sg in hv.partition(gm, **cfgs["tensorrt"]).subgraphs}
        assert "tensorrt" in trt_only and "inductor" not in trt_only
        mixed = {sg.backend for sg in hv.partition(gm, **cfgs["mixed"]).subgraphs}
        assert mixed == {"tensorrt", "inductor", "torch"}
    assert list(dict(gpu_check.configs(hv, tiny_conv[2], trt_ok=False))) == ["inductor"]


def test_a_row_that_fell_back_is_a_problem_and_shows_it(gpu_check, tiny_conv, monkeypatch) -> None:
    import torch._inductor

    def boom(*args, **kwargs):
        raise RuntimeError("engine build failed")

    _, x, gm = tiny_conv
    monkeypatch.setattr(torch._inductor, "compile", boom)
    part = hv.partition(gm, priority=("inductor",), support={"inductor": hv.support.inductor()}, min_block_size=1)
    m = hv.measure(part, x, cache=CompileCache(), on_error="fallback", warmup=0, iters=1, per_subgraph=False)
    row = gpu_check.row_of("tiny_conv", "mixed", m)
    assert row["fallbacks"] == 1 and row["ran"] == {"torch": 1} and row["precision"] == "fp32"
    detail = row["fallback_detail"][0]
    assert detail["asked"] == "inductor" and "engine build failed" in detail["error"]
    assert gpu_check.trt_problem(row)
    assert not gpu_check.trt_problem({**row, "config": "inductor"})
    assert gpu_check.trt_problem({"model": "bert", "config": "tensorrt", "error": "Stopped: budget"})
    lines = gpu_check.table([row]).splitlines()
    assert lines[0].split()[:5] == ["model", "config", "ran", "fallbacks", "precision"]
    assert lines[2].split()[:5] == ["tiny_conv", "mixed", "torch:1", "1", "fp32"]


@pytest.mark.slow
def test_numerics_row_checks_a_half_precision_model_without_compiling_again(gpu_check) -> None:
    """Without TensorRT the numerics row runs BF16 under TorchInductor (on a GPU: FP16 under
    TensorRT): measured, then checked on the same compiled subgraphs."""
    row = gpu_check.numerics_row(hv, "cpu", False, CompileCache(), model_name="tiny_conv", size=16)
    assert "error" not in row, row.get("error")
    assert row["dtype"] == "bfloat16" and row["backend"] == "inductor" and row["compiled_again"] == 0
    assert row["ran"] == {"inductor": row["subgraphs"]} and row["tolerance"].startswith("bfloat16: ")
    assert row["worst_ratio"] is not None and (row["failing"] == 0) == (row["culprit"] is None)
