"""Digests that are the same in every process: of a tensor's values (taken once per process while
it is unchanged), of a tensor's spec, of raw bytes, of a tuple of parts (at once or one by one),
and of text or JSON. Every cache key hierviz makes is made here (the compile, build and capture
caches, stored verdicts, support and settings keys, a sweep file's rows).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
from typing import Any, Iterable, NamedTuple

import torch
from torch.multiprocessing.reductions import StorageWeakRef


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


class _Remembered(NamedTuple):
    storage: StorageWeakRef  # expired once the storage is freed; while held, its address is not reused
    version: int
    digest: str


# tensor digests taken in this process, by the storage they view (its StorageImpl's address, which
# the weak reference above keeps from being reused) and the view's place on it
_DIGESTS: dict[tuple, _Remembered] = {}
_SWEEP_MIN = 256
_SWEEP_AT = [_SWEEP_MIN]  # forget entries of freed storages when there are this many


def _view(t: torch.Tensor) -> tuple[tuple, StorageWeakRef] | None:
    """(where `t`'s values lie, a weak reference to their storage), or None for a tensor without
    one storage (sparse, meta, a tensor subclass that hides it)."""
    try:
        storage = t.untyped_storage()
        where = (storage._cdata, t.data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype,
                 str(t.device))
        return where, StorageWeakRef(storage)
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def _hash_values(t: torch.Tensor) -> str:
    """A SHA-256 of the tensor's shape, dtype and values (its bytes, on the CPU)."""
    data = t.detach()
    if data.is_complex():
        data = torch.view_as_real(data)
    data = data.contiguous().cpu()
    h = hashlib.sha256()
    h.update(repr((tuple(data.shape), str(data.dtype))).encode())
    if data.numel():
        h.update(data.reshape(-1).view(torch.uint8).numpy().data)  # the bytes, not a copy of them
    return h.hexdigest()


def tensor_digest(t: torch.Tensor) -> str:
    """A SHA-256 of the tensor's values, taken once per process for one view of one storage.

    Remembered by the storage (not the tensor object: a split module's submodules and
    `nn.Parameter(w)` are other objects over the same weights, hashed once for all) and the
    view's place on it (data pointer, offset, shape, stride, dtype, device); used again only
    while the storage lives (a weak reference: a new tensor at a freed one's address is hashed
    anew) and the tensor's version counter is the one it was taken at (an in-place change is
    hashed anew). Changes the version counter does not see (through `.data`, or by memory
    shared outside torch) are not seen: `forget_digests()` after them."""
    view = _view(t)
    hit = _remembered(t, view)
    if hit is not None:
        return hit
    value = _hash_values(t)
    if view is not None:
        _DIGESTS[view[0]] = _Remembered(view[1], t._version, value)
        if len(_DIGESTS) >= _SWEEP_AT[0]:
            _sweep()
    return value


def _remembered(t: torch.Tensor, view: tuple[tuple, StorageWeakRef] | None) -> str | None:
    """The digest taken of `t`'s values as they are now, or None."""
    hit = _DIGESTS.get(view[0]) if view is not None else None
    if hit is not None and hit.version == t._version and not hit.storage.expired():
        return hit.digest
    return None


def _sweep() -> None:
    """Forget the digests of freed storages; sweep again when twice as many remain."""
    for where, entry in list(_DIGESTS.items()):
        if entry.storage.expired():
            _DIGESTS.pop(where, None)
    _SWEEP_AT[0] = max(_SWEEP_MIN, 2 * len(_DIGESTS))


def forget_digests() -> None:
    """Forget every remembered tensor digest (after changing weights in a way torch's version
    counter does not see)."""
    _DIGESTS.clear()


def data_digest(data: bytes | memoryview) -> str:
    """A SHA-256 (hex) of raw bytes (a serialized engine: about 1.2 s for 2 GiB here)."""
    return hashlib.sha256(data).hexdigest()


def data_hasher() -> Any:
    """A running `data_digest`, for bytes that come in pieces (an engine as TensorRT writes it):
    `.update(piece)` each, then `.hexdigest()` is `data_digest` of them all."""
    return hashlib.sha256()


def file_digest(path: str | os.PathLike) -> str:
    """`data_digest` of a file's bytes, read in pieces (a 2.2 GB engine is never whole in memory)."""
    hasher = data_hasher()
    piece = bytearray(1 << 23)
    view = memoryview(piece)
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(piece)
            if not n:
                return hasher.hexdigest()
            hasher.update(view[:n])


PARALLEL_BYTES = 1 << 22  # tensors at least this big are hashed on threads (hashlib lets go of the GIL)


def tensor_digests(tensors: Iterable[torch.Tensor]) -> list[str]:
    """`tensor_digest` of each tensor, in order; the big ones not hashed yet hashed side by side
    on a few threads (as many as the CPU has, at most 4)."""
    tensors = list(tensors)
    big = [t for t in tensors if t.numel() * t.element_size() >= PARALLEL_BYTES and _remembered(t, _view(t)) is None]
    workers = min(4, os.cpu_count() or 1, len(big))
    if workers > 1:
        with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="hierviz-digest") as pool:
            list(pool.map(tensor_digest, big))  # remembered: the loop below reads them back
    return [tensor_digest(t) for t in tensors]


def digest(parts: Iterable[Any]) -> str:
    """A SHA-256 (hex) of the parts' repr: equal parts give equal digests in every process."""
    return hashlib.sha256(repr(tuple(parts)).encode()).hexdigest()


def text_digest(text: str, size: int = 16) -> str:
    """The first `size` hex digits of a SHA-256 of `text` (UTF-8; lone surrogates kept): a short
    key or file-name part, equal in every process."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:size]


def json_digest(value: Any, size: int = 16) -> str:
    """`text_digest` of `value` as JSON with sorted keys (what JSON cannot hold by its str())."""
    return text_digest(json.dumps(value, sort_keys=True, default=str), size)


class PartsDigest:
    """A SHA-256 of parts added one at a time (a trace's ops as they run, a model's modules as
    they are walked): each part by its repr, so equal parts in equal order give equal digests in
    every process."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def add(self, piece: Any) -> None:
        self._hash.update(repr(piece).encode("utf-8", "surrogatepass"))
        self._hash.update(b"\0")  # parts stay apart: 1 then 23 is not 12 then 3

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


__all__ = ["data_digest", "data_hasher", "digest", "forget_digests", "json_digest", "stamp", "tensor_digest",
           "tensor_digests", "tensor_key", "text_digest", "PartsDigest", "PARALLEL_BYTES"]
