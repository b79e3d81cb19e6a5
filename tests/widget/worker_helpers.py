"""What the worker tests send to the explorer's worker process: a small model, a backend that
takes every op, and compilers for it (eager, and one that waits), defined at module level so
that the worker process imports them by name (it gets this process's sys.path)."""

from __future__ import annotations

import os
import time

import torch
from torch import nn

import hierviz as hv

MARK = "HIERVIZ_TEST_WORKER_MARK"  # the file the waiting compiler creates when a compile starts


class TwoBlocks(nn.Module):
    """conv-relu, an op without a TensorRT converter (special_i0e), conv-tanh."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, padding=1)
        self.b = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        y = y + torch.special.i0e(y)
        return torch.tanh(self.b(y))


def model_and_inputs() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return TwoBlocks().eval(), (torch.randn(1, 3, 8, 8),)


def every_call(node) -> bool:
    return node.op == "call_function"


def eager(gm, example_inputs):
    """The 'same' backend's compiler: the subgraph as it is."""
    return gm


HOLD_S = 600.0  # longer than any test waits for anything: a test sees the compile still held, or its process ended


def waits(gm, example_inputs):
    """A compiler that marks the file named by $HIERVIZ_TEST_WORKER_MARK, then holds for HOLD_S
    (its process is killed first)."""
    path = os.environ.get(MARK)
    if path:
        with open(path, "w") as f:
            f.write(str(os.getpid()))
    time.sleep(HOLD_S)
    return gm


SAME = hv.Config(priority=("same",), support={"same": hv.support.where(every_call, name="every op")},
                 min_block_size=1)
QUICK = {"warmup": 0, "iters": 3, "compilers": {"same": eager}}
WAITING = {"warmup": 0, "iters": 3, "compilers": {"same": waits}}
