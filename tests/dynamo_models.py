"""Small models with graph breaks, shared by the graph-by-graph tests (ir="torch_compile").

Each line that breaks the graph carries a `# break: <what>` comment, so tests find the user's
line the break must point at (`break_line`)."""

from __future__ import annotations

import inspect

import torch
from torch import nn


class IfOnSum(nn.Module):
    """A data-dependent `if` on `.sum()`: dynamo cannot trace the branch."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x)))
        if y.sum() > 0:  # break: if
            y = y * 2 + 1
        else:
            y = y - 1
        return self.head(y.mean((2, 3))).relu()


class Prints(nn.Module):
    """A `print` between two blocks of compute."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 32), nn.LayerNorm(32))
        self.b = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        print("hidden", tuple(h.shape))  # break: print
        return torch.softmax(self.b(h), dim=-1)


class ItemArith(nn.Module):
    """`.item()` used in Python arithmetic: the scalar leaves the graph and comes back."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.proj(x))
        scale = 1.0 / (h.abs().max().item() + 1e-3)  # break: item
        return torch.sigmoid(self.proj(h * scale)) * 2 - 1


class NoBreak(nn.Module):
    """No graph break at all: one graph."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)) + 1


class DetachOnly(nn.Module):
    """A first graph with nothing to partition (a `detach`, which the lowering removes) before
    a print, then compute."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.detach()
        print("detached")  # break: print
        return self.lin(h).relu()


class ThreeGraphs(nn.Module):
    """Two graph breaks between three graphs of compute: a `print` whose text holds quotes,
    braces, `<>` and `&` (the picture's break marker shows the user's code line), then a
    data-dependent `if`."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.mid = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        print('<y> {"shape": %s} & \'done\'' % (tuple(y.shape),))  # break: print
        y = self.mid(y) + y
        if y.mean() > 0:  # break: if
            y = y * 2
        return torch.softmax(self.head(y.mean((2, 3))), dim=-1)


class _Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).relu()


class _Tail(_Head):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).sigmoid()


class BreakInALoop(nn.Module):
    """A break inside a loop: dynamo runs forward in Python and compiles each head on its own,
    so the heads' graphs meet with no graph break between them."""

    def __init__(self) -> None:
        super().__init__()
        self.heads = nn.ModuleList([_Head(), _Tail()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = []
        for head in self.heads:
            y = head(x)
            if y.sum().item() > -1e9:  # break: loop
                out.append(y)
        return torch.stack(out)


TOYS = {"if_on_sum": (IfOnSum, (1, 3, 8, 8)), "prints": (Prints, (2, 16)), "item_arith": (ItemArith, (2, 8)),
        "three_graphs": (ThreeGraphs, (1, 3, 8, 8))}


def load(name: str) -> tuple[nn.Module, tuple]:
    """(model in eval mode, example inputs), with fixed random weights."""
    cls, shape = TOYS[name]
    torch.manual_seed(0)
    return cls().eval(), (torch.randn(*shape),)


def break_line(cls: type, what: str) -> int:
    """The source line of `cls.forward` marked `# break: <what>`."""
    lines, start = inspect.getsourcelines(cls.forward)
    return next(start + k for k, line in enumerate(lines) if f"# break: {what}" in line)


class ThreeBreaks(nn.Module):
    """Three graph breaks: a `print` between two TensorRT-eligible blocks, a data-dependent `if`
    and an `.item()`; `breaks=False` is the same model (same weights) without the print, for
    checking what removing that break gives."""

    def __init__(self, breaks: bool = True) -> None:
        super().__init__()
        self.breaks = breaks
        self.a = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.b = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh())
        self.c = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        if self.breaks:
            print("a done")  # break: print
        h = self.b(h)
        if h.mean() > 0:  # break: if
            h = h * 2
        s = h.abs().max().item()  # break: item
        return self.c(h / (s + 1.0))


def three_breaks(breaks: bool = True) -> tuple[nn.Module, tuple]:
    """ThreeBreaks in eval mode with fixed random weights (the same for both forms), and its input."""
    torch.manual_seed(0)
    model = ThreeBreaks(breaks).eval()
    return model, (torch.randn(4, 16),)
