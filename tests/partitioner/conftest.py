"""Fixtures shared by the partitioner tests."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv


@pytest.fixture(scope="module")
def graph() -> torch.fx.GraphModule:
    """The capture of test_blockers.Blocked (ops with no TensorRT converter, a SiLU, short runs
    that get demoted): the model of the blockers, check and saved-partition tests."""
    from tests.partitioner.test_blockers import Blocked

    return hv.capture(Blocked(), (torch.randn(2, 8),))
