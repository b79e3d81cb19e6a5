"""`hierviz check MODEL --build --repro DIR`: a repro written for each engine that failed to
convert or build, where it went said; `--repro` without `--build` is a usage error."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hierviz import trt
from tests.cli.test_cli import run_cli

needs_rtx = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                               reason="needs TensorRT-RTX, which builds engines on the CPU")

MODEL_SOURCE = '''
import torch
from tests.building.models import FusedQKV, made


def qkv():
    return made(FusedQKV, 1, 16, 64)
'''


def _refusing_split(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every graph holding aten.split fails at build (as TensorRT's builder would), in a build
    cache of its own; the others are built for real."""
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    real = trt.convert_and_build

    def fake(gm: torch.fx.GraphModule, settings: object = None, **options: object) -> trt.EngineBuild:
        if any(n.target is torch.ops.aten.split.Tensor for n in gm.graph.nodes):
            return trt.EngineBuild("build", 1, 0.0, 0.0, exception="RuntimeError",
                                   error="the builder refused aten.split (size 64)")
        return real(gm, settings, **options)

    monkeypatch.setattr(trt, "convert_and_build", fake)


def test_repro_without_build_is_a_usage_error(capsys, tmp_path):
    code, out, err = run_cli(capsys, "check", "resnet18", "--max-subgraphs", "3", "--repro", str(tmp_path / "r"))
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"hierviz: error: --repro {tmp_path / 'r'}: a repro is made of an engine "
                                        "that failed to build; add --build."]
    assert not (tmp_path / "r").exists()


def test_repro_into_a_file_is_a_usage_error(capsys, tmp_path):
    (tmp_path / "f").write_text("x")
    code, _, err = run_cli(capsys, "check", "resnet18", "--build", "--repro", str(tmp_path / "f"))
    assert code == 2 and "that is a file; give a folder" in err and len(err.strip().splitlines()) == 1


@needs_rtx
def test_a_failed_engine_gets_its_repro_written_and_said(capsys, monkeypatch, tmp_path):
    _refusing_split(monkeypatch, tmp_path)
    (tmp_path / "qkv_model.py").write_text(MODEL_SOURCE)
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    out_dir = tmp_path / "repros"
    code, out, _ = run_cli(capsys, "check", f"{tmp_path / 'qkv_model.py'}:qkv", "--min-block-size", "1",
                           "--build", "--repro", str(out_dir))
    assert code == 1
    assert "engine _run_on_acc_tensorrt_0 failed at build: the builder refused aten.split (size 64)" in out
    folder = out_dir / "_run_on_acc_tensorrt_0"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "repro.log", "repro.pt2", "repro.py"]
    line = next(x for x in out.splitlines() if x.startswith("repro of "))
    # the fake refusal is no TensorRT failure: the saved repro.py builds, so it reproduced nothing
    assert line == (f"repro of _run_on_acc_tensorrt_0: 1 of 16 nodes fail at build, written to {folder} "
                    f"(repro.py, repro.pt2, README.md); did not reproduce: repro.py builds it without the failure in "
                    f"a fresh process (see {folder / 'repro.log'})")
    readme = (folder / "README.md").read_text()
    assert "the builder refused aten.split (size 64)" in readme and "split" in readme
    assert readme.startswith("## Did not reproduce: ") and "fails to build" not in readme


@needs_rtx
def test_every_engine_built_writes_no_repro(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "check", "resnet18", "--build", "--repro", str(tmp_path / "r"))
    assert code == 0, out
    assert out.splitlines()[-1] == (f"--repro {tmp_path / 'r'}: no engine failed to convert or build, "
                                    "so no repro was written")
    assert not (tmp_path / "r").exists()


@needs_rtx
@pytest.mark.slow
def test_gpt2_gets_a_verified_repro_of_at_most_15_nodes(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "check", "gpt2", "--min-block-size", "3", "--build", "--repro", str(tmp_path))
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith("repro of _run_on_acc_tensorrt_0: "))
    nodes = int(line.split(": ", 1)[1].split(" of ")[0])
    assert nodes <= 15 and line.endswith("verified: repro.py fails the same way in a fresh process"), line
    assert (tmp_path / "_run_on_acc_tensorrt_0" / "repro.py").is_file()
