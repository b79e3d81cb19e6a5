"""Failures that are not the subgraph's raise hv.BuildError, are never stored and never start a
fix search: out of memory (Python's, torch's, TensorRT's logged one), an interrupt, and hierviz's
own errors calling Torch-TensorRT (a private API that moved). A converter's own AttributeError,
raised inside Torch-TensorRT, stays the subgraph's failure at stage convert."""

from __future__ import annotations

import re

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.errors import BuildInterrupted
from tests.building.models import ConvNet, made

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")

TENSORRT_OOM = ("[virtualMemoryBuffer.cpp::resizePhysical::154] Error Code 2: OutOfMemory "
                "(Requested size was 4294967296 bytes.)")


def _subgraph() -> tuple[hv.Partition, torch.fx.GraphModule]:
    part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    return part, getattr(part.module, part.subgraphs[0].tag)


def _interpreter():
    from torch_tensorrt.dynamo.conversion._TRTInterpreter import TRTInterpreter

    return TRTInterpreter


def _raises(exc: BaseException):
    def raising(*args, **kwargs):
        raise exc
    return raising


@pytest.mark.parametrize("exc", [MemoryError(), torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB")])
def test_out_of_memory_while_converting_is_a_build_error(monkeypatch, exc) -> None:
    _, gm = _subgraph()
    monkeypatch.setattr(_interpreter(), "_construct_trt_network_def", _raises(exc))
    with pytest.raises(hv.BuildError) as caught:
        trt.convert_and_build(gm, label="_run_on_acc_tensorrt_0")
    text = str(caught.value)
    assert text.startswith("part.build(): out of memory while Torch-TensorRT converted _run_on_acc_tensorrt_0 (")
    assert re.search(rf"\(\d+ bytes of weights; {type(exc).__name__}", text)
    assert "free memory or build a smaller part" in text and text.endswith("nothing was stored")
    assert caught.value.__cause__ is exc


def _builder_that(monkeypatch, build) -> None:
    """The interpreter's TensorRT builder replaced by one whose build_serialized_network is `build`."""
    interpreter = _interpreter()
    populate = interpreter._populate_trt_builder_config

    class Builder:
        def __init__(self, real):
            self.real = real

        def build_serialized_network(self, net, config):
            return build(net, config)

        def build_serialized_network_to_stream(self, net, config, writer):
            engine = build(net, config)
            return engine is not None and writer.write(bytes(engine)) == len(engine)

        def __getattr__(self, name):
            return getattr(self.real, name)

    def populated(self, *args, **kwargs):
        config = populate(self, *args, **kwargs)
        self.builder = Builder(self.builder)
        return config

    monkeypatch.setattr(interpreter, "_populate_trt_builder_config", populated)


def test_tensorrts_logged_out_of_memory_is_a_build_error(monkeypatch) -> None:
    from torch_tensorrt.logging import TRT_LOGGER

    severity = trt.tensorrt_library().ILogger.Severity.ERROR

    def out_of_memory(net, config):
        TRT_LOGGER.log(severity, TENSORRT_OOM)
        return None

    _, gm = _subgraph()
    _builder_that(monkeypatch, out_of_memory)
    with pytest.raises(hv.BuildError, match=r"out of memory while TensorRT built _run_on_acc_tensorrt_0 \(") as caught:
        trt.convert_and_build(gm, label="_run_on_acc_tensorrt_0")
    assert "Error Code 2: OutOfMemory (Requested size was 4294967296 bytes.)" in str(caught.value)


def test_torchs_out_of_memory_while_building_is_a_build_error(monkeypatch) -> None:
    _, gm = _subgraph()
    _builder_that(monkeypatch, _raises(torch.OutOfMemoryError("CUDA out of memory")))
    with pytest.raises(hv.BuildError, match="out of memory while TensorRT built the subgraph"):
        trt.convert_and_build(gm)


def test_an_interrupt_is_a_build_error_and_still_an_interrupt(monkeypatch) -> None:
    _, gm = _subgraph()
    _builder_that(monkeypatch, _raises(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt) as caught:
        trt.convert_and_build(gm, label="_run_on_acc_tensorrt_0")
    assert isinstance(caught.value, hv.BuildError) and isinstance(caught.value, BuildInterrupted)
    assert str(caught.value).startswith("part.build(): interrupted while TensorRT built _run_on_acc_tensorrt_0; "
                                        "nothing of it was stored")


def test_a_private_api_that_moved_is_hieviz_s_build_error(monkeypatch) -> None:
    _, gm = _subgraph()
    monkeypatch.delattr(_interpreter(), "_construct_trt_network_def")
    with pytest.raises(hv.BuildError) as caught:
        trt.convert_and_build(gm)
    name, version = trt.installed_distribution()
    text = str(caught.value)
    assert text.startswith(f"part.build(): hierviz could not call {name} {version}'s "
                           "TRTInterpreter._construct_trt_network_def (AttributeError: ")
    assert "this Torch-TensorRT is not the one hierviz supports" in text and "pip install" in text
    assert isinstance(caught.value.__cause__, AttributeError)


def test_a_call_that_no_longer_fits_is_hieviz_s_build_error(monkeypatch) -> None:
    _, gm = _subgraph()
    interpreter = _interpreter()

    def populate(self):  # the real one takes two arguments
        return None

    monkeypatch.setattr(interpreter, "_populate_trt_builder_config", populate)
    with pytest.raises(hv.BuildError, match=r"could not call .*'s .*<locals>\.populate \(TypeError: .*populate\(\)"):
        trt.convert_and_build(gm)


def test_a_converters_own_attribute_error_is_the_subgraphs_failure(monkeypatch) -> None:
    from torch_tensorrt.dynamo.conversion.impl import activation

    _, gm = _subgraph()
    monkeypatch.delattr(activation, "relu")  # aten.relu's converter, in torch_tensorrt, now fails to find it
    made_ = trt.convert_and_build(gm)
    assert (made_.stage, made_.exception) == ("convert", "AttributeError")
    assert made_.node is not None and "relu" in made_.node
    assert made_.error.startswith("AttributeError: module 'torch_tensorrt.dynamo.conversion.impl.activation' has no "
                                  "attribute 'relu'")


def test_part_build_lets_a_build_error_through_and_stores_nothing(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    model, x = made(ConvNet, 1, 3, 16, 16)
    part = hv.partition(model, x, min_block_size=1)
    with monkeypatch.context() as patched:
        patched.setattr(_interpreter(), "_construct_trt_network_def", _raises(MemoryError()))
        with pytest.raises(hv.BuildError, match="out of memory while Torch-TensorRT converted"):
            part.build()
    builds = part.build()
    assert builds.ok and builds.df["cached"].tolist() == [False]
    assert part.build().df["cached"].tolist() == [True]
