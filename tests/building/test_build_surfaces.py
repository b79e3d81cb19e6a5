"""Builds where a partition is judged: hv.check(build=True), `hierviz check --build`, the report."""

from __future__ import annotations

import pytest

import hierviz as hv
from hierviz import trt
from tests.building.models import ConvNet, FusedQKV, made
from tests.test_cli import run_cli

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")


def test_check_with_build_names_the_failed_engine():
    model, x = made(FusedQKV, 1, 16, 64)
    part = hv.partition(model, x, min_block_size=1)
    with pytest.raises(hv.PartitionCheckError) as err:
        hv.check(part, build=True)
    text = str(err.value)
    assert "engine _run_on_acc_tensorrt_0 failed at build: IBuilder::buildSerializedNetwork: Error Code 1: Myelin" in text
    assert "then torch_tensorrt.compile raises RuntimeError" in text and "fix: torch_executed_ops=" in text
    hv.check(hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1), build=True)  # builds: quiet
    with pytest.raises(hv.ConfigError, match="build= is True"):
        hv.check(part, build="yes")


def test_cli_check_build_exits_0_for_resnet18_and_1_for_gpt2(capsys):
    code, out, _ = run_cli(capsys, "check", "resnet18", "--build")
    assert code == 0, out
    assert out.startswith("partition check passed") and "engines: 1/1 engines built, " in out
    code, out, _ = run_cli(capsys, "check", "gpt2", "--min-block-size", "3", "--build")
    assert code == 1
    assert "engine _run_on_acc_tensorrt_0 failed at build: " in out and "MyelinCheckException" in out


def test_a_saved_partition_cannot_be_built(tmp_path):
    part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    saved = hv.load_partition(part.save(tmp_path / "p.json"))
    with pytest.raises(hv.SavedPartitionError, match=r"build\(\) needs the model's graph"):
        saved.build()
