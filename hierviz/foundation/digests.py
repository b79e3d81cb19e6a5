"""Digests that are the same in every process: of a tensor's values (remembered while it is
unchanged), of a tensor's spec, and of a tuple of parts. The compile cache and the build cache
key on them.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
from typing import Any, Iterable

import torch
from torch.utils.weak import WeakIdKeyDictionary


def stamp(t: torch.Tensor) -> tuple:
    """What changes when a tensor is changed in place or replaced: data pointer, version counter,
    shape, stride, dtype."""
    return (t.data_ptr(), t._version, tuple(t.shape), tuple(t.stride()), t.dtype)


def tensor_key(t: Any) -> tuple:
    """Shape, stride, dtype and device type of a tensor; the repr of anything else."""
    if isinstance(t, torch.Tensor):
        return ("T", tuple(t.shape), tuple(t.stride()), str(t.dtype), t.device.type, t.storage_offset())
    if isinstance(t, (int, float, bool)):
        return ("S", type(t).__name__, repr(t))
    return ("O", type(t).__qualname__)


_DIGESTS: WeakIdKeyDictionary = WeakIdKeyDictionary()


def tensor_digest(t: torch.Tensor) -> str:
    """A SHA-256 of the tensor's values, remembered while the tensor is unchanged (its data
    pointer and version counter). In-place changes made through `.data` bypass the version
    counter: clear the cache after them."""
    now = stamp(t)
    hit = _DIGESTS.get(t)
    if hit is not None and hit[0] == now:
        return hit[1]
    data = t.detach()
    if data.is_complex():
        data = torch.view_as_real(data)
    data = data.contiguous().cpu()
    h = hashlib.sha256()
    h.update(repr((tuple(data.shape), str(data.dtype))).encode())
    if data.numel():
        h.update(data.reshape(-1).view(torch.uint8).numpy().data)  # the bytes, not a copy of them
    value = h.hexdigest()
    _DIGESTS[t] = (now, value)
    return value


PARALLEL_BYTES = 1 << 22  # tensors at least this big are hashed on threads (hashlib lets go of the GIL)


def tensor_digests(tensors: Iterable[torch.Tensor]) -> list[str]:
    """`tensor_digest` of each tensor, in order; the big ones hashed side by side on a few
    threads (as many as the CPU has, at most 4)."""
    tensors = list(tensors)
    big = [t for t in tensors if t.numel() * t.element_size() >= PARALLEL_BYTES]
    workers = min(4, os.cpu_count() or 1, len(big))
    if workers > 1:
        with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="hierviz-digest") as pool:
            list(pool.map(tensor_digest, big))  # remembered: the loop below reads them back
    return [tensor_digest(t) for t in tensors]


def digest(parts: Iterable[Any]) -> str:
    """A SHA-256 (hex) of the parts' repr: equal parts give equal digests in every process."""
    return hashlib.sha256(repr(tuple(parts)).encode()).hexdigest()


__all__ = ["digest", "stamp", "tensor_digest", "tensor_digests", "tensor_key", "PARALLEL_BYTES"]
