"""A model that fails under torch.compile says why on the first line: dynamo wraps the model's
own error in its fake-tensor errors, and the message names the model's error, not the wrapper."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv

CONV = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).eval()
LINEAR = torch.nn.Sequential(torch.nn.Linear(16, 4), torch.nn.ReLU()).eval()
HEAD = "running Sequential under torch.compile (as torch_tensorrt.compile(ir='torch_compile') does) failed: "


@pytest.mark.parametrize(("model", "x", "cause"), [
    (CONV, torch.randn(1, 4, 16, 16), "RuntimeError: Given groups=1, weight of size [8, 3, 3, 3], expected "
                                      "input[1, 4, 16, 16] to have 3 channels, but got 4 channels instead"),
    (CONV, torch.randn(1, 3, 16, 16, dtype=torch.float64),
     "RuntimeError: Input type (double) and bias type (float) should be the same"),
    (LINEAR, torch.randn(2, 12), "RuntimeError: a and b must have same reduction dim, but got [2, 12] X [16, 4]."),
], ids=["channels", "float64", "linear"])
def test_the_models_own_error_is_on_the_first_line(model, x, cause):
    with pytest.raises(hv.CaptureError) as err:
        hv.partition(model, (x,), ir="torch_compile")
    assert str(err.value).splitlines()[0] == HEAD + cause
