"""An engine file is read as data: the settings Torch-TensorRT pickles into an engine's state are
checked before it unpickles them, so a crafted file runs nothing (no GPU needed: the file is
refused before any engine is made)."""

from __future__ import annotations

import base64
import pickle

import pytest
import sympy
import torch

from hierviz import trt
from hierviz.trt.engine_metadata import check_engine_state, check_metadata

pytestmark = pytest.mark.skipif(not trt.available(), reason="torch_tensorrt is not installed")


class Payload:
    def __init__(self, marker) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


class ParsedByFloorDiv:
    """A pickle that hands FloorDiv a string: sympy would parse (eval) it."""

    def __init__(self, marker) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        from torch.utils._sympy.functions import FloorDiv

        return (FloorDiv, (f"open({self.marker!r}, 'w').write('ran') and 4", 2))


def encode(metadata) -> str:
    """The metadata as Torch-TensorRT itself encodes it into an engine's state."""
    from torch_tensorrt.dynamo.runtime import TorchTensorRTModule

    return TorchTensorRTModule.encode_metadata(None, metadata)


def decode(encoded):
    """What Torch-TensorRT's set_extra_state does with it (an unrestricted pickle.loads)."""
    from torch_tensorrt.dynamo.runtime import TorchTensorRTModule

    return TorchTensorRTModule.decode_metadata(encoded)


def test_the_settings_and_symbolic_shapes_of_an_engine_pass() -> None:
    from torch.utils._sympy.functions import FloorDiv

    settings = trt.default_settings(torch_executed_ops={"torch.ops.aten.relu.default"}, min_block_size=3)
    s0 = sympy.Symbol("s0", integer=True, positive=True)
    shapes = {"inputs": [{"shape_exprs": [s0, 3, 8, 8], "dtype": torch.float32}],
              "outputs": [{"shape_exprs": [FloorDiv(s0 - 1, 2) + 1, sympy.Max(s0, 2) * 4], "dtype": torch.float16}]}
    read = check_metadata(encode({"settings": settings, "inout_symexprs": shapes, "output_tensors_are_unowned": True}))
    assert read["inout_symexprs"] == shapes and read["output_tensors_are_unowned"] is True
    assert read["settings"].torch_executed_ops == {"torch.ops.aten.relu.default"}
    assert read["settings"].min_block_size == 3 and read["settings"].device.gpu_id == settings.device.gpu_id


@pytest.mark.parametrize("crafted", [Payload, ParsedByFloorDiv], ids=["a call", "a string for sympy to parse"])
def test_crafted_metadata_is_refused_having_run_nothing(tmp_path, crafted) -> None:
    marker = tmp_path / "ran"
    encoded = base64.b64encode(pickle.dumps({"settings": crafted(marker)})).decode()
    with pytest.raises(pickle.UnpicklingError):
        check_metadata(encoded)
    assert not marker.exists()
    decode(encoded)  # the payload is live: Torch-TensorRT's own unpickling runs it
    assert marker.exists()


def _state(metadata: str) -> dict:
    info = ["abi", "name_engine", "device", base64.b64encode(b"engine"), "x", "y", "0", metadata]
    return {"_extra_state": ("name", info, ["x"], ["y"])}


def test_load_engine_refuses_a_crafted_file_before_making_anything(tmp_path) -> None:
    from torch_tensorrt.dynamo.runtime import _TorchTensorRTModule as upstream

    index = upstream.SERIALIZED_METADATA_IDX
    marker = tmp_path / "ran"
    outer, inner = tmp_path / "outer.bin", tmp_path / "inner.bin"
    torch.save(Payload(marker), outer)  # the whole file a pickle that runs code
    torch.save({"format": "hierviz-tensorrt-v1",
                "state": _state(base64.b64encode(pickle.dumps(Payload(marker))).decode())}, inner)
    for path in (outer, inner):
        with pytest.raises(pickle.UnpicklingError):
            trt.load_engine(path)
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError, match="not a Torch-TensorRT module's state"):
        check_engine_state({"weight": torch.ones(1)}, index)
    check_engine_state(_state(encode({"settings": trt.default_settings(), "inout_symexprs": None,
                                      "output_tensors_are_unowned": False})), index)
