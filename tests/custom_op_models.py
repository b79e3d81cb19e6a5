"""Models whose captured graphs hold custom ops registered outside torch, for the tests that read
such graphs back in another process: a user's `torch.library.custom_op` defined here (an
importable module, as a user's own package would be), and a pad before a conv, which
Torch-TensorRT's lowering turns into its own `tensorrt::conv_asym_pad`.

`main_cell_model()` defines an op as a notebook cell or a script does (its functions' module is
`__main__`: no other process can import it).

Import it as `tests.custom_op_models` only: a second import under another name would register
its op twice."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

MYSIN = "hvtest::mysin"


@torch.library.custom_op(MYSIN, mutates_args=())
def mysin(x: torch.Tensor) -> torch.Tensor:
    """sin(x), as an op torch does not know."""
    return torch.sin(x)


@mysin.register_fake
def _mysin_fake(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class SinNet(nn.Module):
    """linear, the custom op, linear: the op between two TensorRT blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(6, 8)
        self.b = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(mysin(torch.relu(self.a(x))))


class PadConv(nn.Module):
    """An asymmetric pad before a conv (Torch-TensorRT lowers the pair to tensorrt::conv_asym_pad)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(F.pad(x, (1, 0, 2, 1))))


def seeded(cls: type[nn.Module]) -> nn.Module:
    """An instance of `cls` with the same weights in every process, in eval mode."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return cls().eval()


def example(cls: type[nn.Module]) -> tuple[torch.Tensor, ...]:
    """The example inputs of `cls`, the same in every process."""
    shape = (2, 6) if cls is SinNet else (1, 3, 8, 8)
    return (torch.randn(*shape, generator=torch.Generator().manual_seed(1)),)


MAIN_OP = "hvtest_main::twice"
MAIN_CELL = f"""
import torch

@torch.library.custom_op({MAIN_OP!r}, mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2

@twice.register_fake
def _(x):
    return torch.empty_like(x)

class Twice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(twice(x))
"""


@functools.lru_cache(maxsize=1)
def _main_cell() -> dict:
    """MAIN_CELL's namespace, run once as `__main__` (an op is registered once per process)."""
    namespace = {"__name__": "__main__"}
    exec(compile(MAIN_CELL, "<cell>", "exec"), namespace)
    return namespace


def main_cell_model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A model calling MAIN_OP, an op defined in `__main__`, and its example inputs."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return _main_cell()["Twice"]().eval(), (torch.ones(2, 4),)
