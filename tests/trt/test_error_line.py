"""A build's `error` is the informative line of what failed (at most 200 characters, object
addresses left out): for pybind's incompatible arguments the function and what it was invoked
with, for a Myelin error its CHECK with file:line; `details` keeps the whole text."""

from __future__ import annotations

import pytest

import hierviz as hv
from hierviz import trt
from hierviz.building.engine_store import EngineStore
from hierviz.trt.engine_builder import EngineBuild, error_line
from tests.building.failing_converters import BUILD_ERROR, RefusesToBuild
from tests.building.models import made

needs_trt = pytest.mark.skipif(not trt.available(), reason=f"torch_tensorrt unusable: {trt.info().error}")
needs_rtx = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                               reason="needs TensorRT-RTX, which builds engines on the CPU")

# What TensorRT-RTX 1.6.1 logs building tests/building/models.py's FusedQKV (min_block_size=1)
MYELIN = ("IBuilder::buildSerializedNetwork: Error Code 1: Myelin ([myelin_graph.h:1259: attachExceptionMsgToGraph] "
          "MyelinCheckException: operand.cpp:156: CHECK(logical_mem_size == data_->size()) failed. logical memory "
          "size (768) should be equal to non-opaque payload size (12288) In compileGraph at "
          "/_src/optimizer/myelin/codeGenerator.cpp:1962)")
MYELIN_LINE = ("IBuilder::buildSerializedNetwork: Error Code 1: Myelin (operand.cpp:156: CHECK(logical_mem_size == "
               "data_->size()) failed. logical memory size (768) should be equal to non-opaque payload size (12288)…")


def test_a_myelin_error_keeps_its_check_with_file_and_line() -> None:
    assert error_line(MYELIN) == MYELIN_LINE
    assert len(MYELIN_LINE) <= 200


def test_a_short_check_is_kept_whole() -> None:
    said = "Error Code 2: Internal Error ([graph.cpp:12: f] Exception: shape.cpp:7: CHECK(a == b) failed.)"
    assert error_line(said) == "Error Code 2: Internal Error (shape.cpp:7: CHECK(a == b) failed.)"


@needs_trt
def test_pybinds_incompatible_arguments_name_the_function_and_what_it_was_invoked_with() -> None:
    lib = trt.tensorrt_library()
    network = lib.Builder(lib.Logger()).create_network(0)
    x = network.add_input("x", lib.float32, (2, 3))
    with pytest.raises(TypeError) as caught:
        network.add_activation(x, "relu", 3)
    assert "The following argument types are supported" in str(caught.value)  # what pybind says, at length
    assert error_line(caught.value) == ("TypeError: add_activation(): incompatible function arguments; invoked with: "
                                        "<INetworkDefinition>, <ITensor>, 'relu', 3")
    with pytest.raises(TypeError) as caught:
        network.add_elementwise(x, 2.0, lib.ElementWiseOperation.SUM)
    assert error_line(caught.value) == ("TypeError: add_elementwise(): incompatible function arguments; invoked "
                                        "with: <INetworkDefinition>, <ITensor>, 2.0, <ElementWiseOperation.SUM: 0>")


def test_a_long_invocation_is_cut_at_200_characters() -> None:
    said = ("f(): incompatible function arguments. The following argument types are supported:\n    1. (x: int) -> None"
            "\n\nInvoked with: " + ", ".join(f"<pkg.ITensor object at 0x7f{i:04x}>" for i in range(40)))
    line = error_line(TypeError(said))
    assert line.startswith("TypeError: f(): incompatible function arguments; invoked with: <ITensor>, <ITensor>")
    assert len(line) <= 200 and line.endswith("…") and "0x" not in line


def test_anything_else_gives_its_first_line_without_addresses() -> None:
    assert error_line(ValueError("bad <foo.Bar object at 0x7f00aa> here\nmore")) == "ValueError: bad <Bar> here"
    assert error_line(AssertionError()) == "AssertionError"
    assert error_line("RuntimeError: one\ntwo") == "RuntimeError: one"


@needs_rtx
def test_a_builder_failure_gives_its_line_and_keeps_every_logged_error_in_details() -> None:
    model, x = made(RefusesToBuild, 2, 8)  # the test's converter adds an assertion the builder refuses
    part = hv.partition(model, x, min_block_size=1)
    built = trt.convert_and_build(getattr(part.module, part.subgraphs[0].tag))
    assert built.stage == "build" and built.exception == "RuntimeError"
    assert built.error.startswith("IBuilder::buildSerializedNetwork: Error Code 4: API Usage Error (IAssertionLayer ")
    # TensorRT names the layer twice before the assertion's message: the line is cut, the details keep it whole
    assert built.error_cut and len(built.error) <= 200 and built.error.endswith("…") and BUILD_ERROR not in built.error
    assert built.details.startswith(built.error[:-1]) and BUILD_ERROR in built.details


def test_a_myelin_failures_details_keep_what_its_line_leaves_out() -> None:
    from hierviz.trt.build_errors import error_details, telling_error

    logged = [MYELIN, NO_DRIVER]  # what TensorRT-RTX 1.6.1 logs when its builder fails on FusedQKV here
    assert error_line(telling_error(logged)) == MYELIN_LINE
    details = error_details(logged)
    assert "codeGenerator.cpp:1962" in details and "attachExceptionMsgToGraph" in details and NO_DRIVER in details


def test_details_and_warnings_come_back_from_the_build_store(tmp_path) -> None:
    store = EngineStore(tmp_path)
    made_ = EngineBuild("build", 3, 0.1, 0.2, exception="RuntimeError", error="E: one", details="E: one\nand two",
                        warnings=("Both operands are constant",))
    store.save("k" * 64, made_)
    back = store.load("k" * 64)
    assert back is not None
    assert (back.details, back.warnings) == ("E: one\nand two", ("Both operands are constant",))
    assert EngineBuild("built", 1, 0.0, 0.0, warnings=["a"]).warnings == ("a",)  # type: ignore[arg-type]


# What TensorRT-RTX logs on a machine whose driver runs no CUDA when its builder refuses a network
ASSERTION = ("IBuilder::buildSerializedNetwork: Error Code 4: API Usage Error (IAssertionLayer (Unnamed Layer* 7) "
             "[Assertion]: condition[0] is false: 0. this engine never builds)")
NO_DRIVER = ("[checkMacros.cpp::catchCudaError::247] Error Code 1: Cuda Runtime (In catchCudaError at "
             "/_src/common/dispatch/checkMacros.cpp:247 (cudaError 35: CUDA driver version is insufficient for "
             "CUDA runtime version))")


def test_the_builders_own_error_is_named_before_a_cuda_runtime_error_logged_after_it() -> None:
    from hierviz.trt.build_errors import telling_error

    assert telling_error([ASSERTION, NO_DRIVER]) == ASSERTION
    assert telling_error([MYELIN, NO_DRIVER]) == MYELIN
    assert telling_error([NO_DRIVER]) == NO_DRIVER  # the only error there is
    assert telling_error(["  ", NO_DRIVER, "something else went wrong"]) == "something else went wrong"
