"""Small seeded models whose weights and inputs are bf16 or fp16, for the low-precision tests
(capture cache, builds). `Mlp`'s SiLU is what makes bf16 differ: Torch-TensorRT's lowering
computes it in another order than eager PyTorch (a few ulps on a third of the outputs)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Layer(nn.Module):
    """A pre-norm residual MLP layer: LayerNorm, Linear, SiLU or GELU, Linear."""

    def __init__(self, width: int, act: str) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(self.norm(x))
        return x + self.down(F.silu(h) if self.act == "silu" else F.gelu(h))


class Mlp(nn.Module):
    """Layers of alternating SiLU and GELU MLPs."""

    def __init__(self, width: int = 64, layers: int = 3) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[Layer(width, "silu" if i % 2 == 0 else "gelu") for i in range(layers)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class Block(nn.Module):
    """A transformer block: LayerNorm, attention by F.scaled_dot_product_attention, an MLP."""

    def __init__(self, width: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.mlp = Layer(width, "gelu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.mlp(x + self.out(a.transpose(1, 2).reshape(b, t, c)))


class ConvNet(nn.Module):
    """Conv, BatchNorm, ReLU twice, then pooling and a Linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean((2, 3)))


def seeded(cls: type[nn.Module], dtype: torch.dtype) -> nn.Module:
    """`cls()` in eval mode with seed-0 weights, cast to `dtype`."""
    torch.manual_seed(0)
    return cls().eval().to(dtype)


def example(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor]:
    """One seeded random input of `shape` in `dtype`."""
    return (torch.randn(shape, generator=torch.Generator().manual_seed(1)).to(dtype),)


MLP_SHAPE = (2, 16, 64)
BLOCK_SHAPE = (2, 8, 32)
CONV_SHAPE = (1, 3, 16, 16)
