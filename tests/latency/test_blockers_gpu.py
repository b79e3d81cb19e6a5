"""Partition.blockers(measure=True) on a CUDA GPU: a validator-rejected op is tried for real
(TensorRT builds it or says why), forced ops and demotions are timed (skipped without a GPU)."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


class CeilPool(torch.nn.Module):
    """max_pool2d(ceil_mode=True) between convolutions: the converter's validator refuses it."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Conv2d(3, 8, 3), torch.nn.Conv2d(8, 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.a(x))
        x = torch.nn.functional.max_pool2d(x, 3, 2, ceil_mode=True)
        return torch.relu(self.b(x)).sum((2, 3))


def test_measured_what_ifs_on_a_gpu() -> None:
    inputs = (torch.randn(2, 3, 32, 32),)
    part = hv.partition(CeilPool(), inputs, min_block_size=2, torch_executed_ops={"aten.sum.dim_IntList"})
    table = part.blockers(measure=True, device="cuda", example_inputs=inputs,
                          measure_options={"warmup": 2, "iters": 10})
    kinds = dict(zip(table.kind, table.measured))
    assert "validator rejected" in kinds and "forced" in kinds
    rejected = table[table.kind == "validator rejected"].iloc[0]
    # TensorRT either built the refused node (timed) or said why it could not (counts kept)
    assert rejected.measured.startswith("measured on cuda") or rejected.measured.startswith("not measured: ")
    forced = table[table.kind == "forced"].iloc[0]
    assert forced.measured.startswith("measured on cuda") and forced.median_ms > 0
    assert forced.speedup_low <= forced.speedup_high
