"""Models whose forward updates a buffer or an input in place (issue 11, case 3): shared by the
capture tests and the split-module tests."""

from __future__ import annotations

import torch
from torch import nn


class EMA(nn.Module):
    """Keeps an exponential moving average of its inputs in a buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("ema", torch.zeros(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.ema.mul_(0.9).add_(x.mean(0) * 0.1)
        return x + self.ema


class DoublesInput(nn.Module):
    """Writes into its input."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        return x + 1
