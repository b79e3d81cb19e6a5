"""Small models that stop at each stage of a build on this machine (tests/building)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class LastRowWrite(nn.Module):
    """`h[:, -1] = ...`: Torch-TensorRT's select_scatter decomposition lowers it to
    slice_scatter(start=-1, end=0), which PyTorch refuses to run (stage "run")."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x).clone()
        h[:, -1] = h[:, 0] * 2  # the line the run failure names
        return h.relu()


class NormBetween(nn.Module):
    """Linear, LayerNorm, Linear: with `_operator.getitem` run in PyTorch, the LayerNorm's
    (out, mean, rstd) tuple leaves its engine, and the converter fails (stage "convert")."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.norm, self.b = nn.Linear(16, 16), nn.LayerNorm(16), nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.norm(self.a(x)).relu())


class FusedQKV(nn.Module):
    """GPT-2's attention, written out: one addmm for q, k and v, split, heads permuted, causal
    attention. TensorRT-RTX 1.6.1's builder fails on it with a Myelin check (stage "build")."""

    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, 3 * d) * 0.02)
        self.bias = nn.Parameter(torch.zeros(3 * d))
        self.d, self.heads = d, heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        y = torch.addmm(self.bias, x.view(-1, self.d), self.w).view(b, t, 3 * self.d)
        q, k, v = (z.view(b, t, self.heads, -1).permute(0, 2, 1, 3) for z in y.split(self.d, dim=2))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return out.permute(0, 2, 1, 3).reshape(b, t, self.d)


class ConvNet(nn.Module):
    """Conv, BatchNorm, ReLU twice: every engine builds (stage "built")."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def made(cls: type, *shape: int) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """The model (eval, seeded weights) and one random input of `shape`."""
    gen = torch.manual_seed(0)
    model = cls().eval()
    return model, (torch.randn(*shape, generator=gen),)


class SeqBlock(nn.Module):
    """A transformer block over (batch, seq, 32): LayerNorm, attention, MLP; for a dynamic
    sequence length."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.norm, self.qkv, self.out = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d)
        x = x + self.out(att)
        return x + self.mlp(x)


class AddsRowOne(nn.Module):
    """`x + x[1]`: needs two rows. Exported with a dynamic batch it runs at any size from 2,
    and fails at 1 (stage "run" at the optimization profile's min)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x + x[1]).relu()
