"""A private copy of the user's model, and the RNG state kept, for anything that runs the model.

Capturing (torch.export, or dynamo running the model once) works on a copy so that the model is
never changed: parameters are shared (nothing writes to them; sharing keeps a large model's
memory), buffers and every other attribute are copied. The random generators are put back as
they were, so a capture never changes what the user's next random draw gives.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Iterator

import torch

from hierviz.errors import CaptureError


def private_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of `model` that capture may change: parameters are shared, everything else is
    copied. CaptureError when the model cannot be deep-copied."""
    memo = {id(p): p for p in model.parameters()}
    try:
        return copy.deepcopy(model, memo)
    except Exception as exc:
        raise CaptureError(
            f"hv.capture works on a copy of {type(model).__name__} so that the model is never "
            f"changed, and copy.deepcopy failed: {type(exc).__name__}: {exc}\n"
            "Hint: make the model deep-copyable (no open files, locks or generators as "
            "attributes), or pass torch.export.export(model, example_inputs) instead."
        ) from exc


@contextlib.contextmanager
def rng_preserved() -> Iterator[None]:
    """Put the CPU (and initialised CUDA) random generators back as they were."""
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=cuda):
        yield


__all__ = ["private_copy", "rng_preserved"]
