"""PyTorch's CPU kernels on one thread for the calling thread alone, without `torch.set_num_threads`.

`torch.set_num_threads(n)`, even with the count it had, turns MKL's dynamic threading off for
the whole process, for good: every vectorised op MKL serves (sqrt, div, exp on a few thousand
values) then wakes MKL's other threads. On a busy two-core machine each such op waited for them
(measured: 55 small sqrt/div ops 2 ms before, 230-660 ms after; Torch-TensorRT's batch-norm
folding of resnet50 took 0.2-0.6 s instead of 0.02 s). `one_thread()` sets only this thread's
OpenMP thread count (OpenMP keeps it per thread: ATen's `parallel_for` and oneDNN read it) and
MKL's count for this thread (`MKL_Set_Num_Threads_Local`), and puts both back after. Where the
runtimes torch uses cannot be reached (another platform, another OpenMP), it changes nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from typing import Any, Iterator

import torch

_TORCH_CPU = ("libtorch_cpu.so", "libtorch_cpu.dylib", "torch_cpu.dll")


@functools.lru_cache(maxsize=1)
def _runtimes() -> tuple[Any, Any, Any]:
    """(omp_get_max_threads, omp_set_num_threads, mkl_set_num_threads_local) as this process
    has them, each None where not found."""
    get = put = mkl = None
    with contextlib.suppress(OSError, AttributeError, TypeError):
        process = ctypes.CDLL(None)
        get, put = process.omp_get_max_threads, process.omp_set_num_threads
        get.argtypes, get.restype, put.argtypes, put.restype = [], ctypes.c_int, [ctypes.c_int], None
    folder = os.path.join(os.path.dirname(torch.__file__), "lib")
    for name in _TORCH_CPU:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with contextlib.suppress(OSError, AttributeError):
                mkl = ctypes.CDLL(path).MKL_Set_Num_Threads_Local  # MKL as linked into torch; C (by value)
                mkl.argtypes, mkl.restype = [ctypes.c_int], ctypes.c_int
            break
    return get, put, mkl


@contextlib.contextmanager
def one_thread() -> Iterator[bool]:
    """PyTorch's kernels called from this thread run on one thread inside; other threads, and
    the process's settings, are untouched. Yields whether it took effect."""
    get, put, mkl = _runtimes()
    if get is None or put is None:
        yield False
        return
    torch.get_num_threads()  # torch's own per-thread setup first: made later, it would undo this
    before = int(get())
    put(1)
    if torch.get_num_threads() != 1:  # not the OpenMP torch uses
        put(before)
        yield False
        return
    mkl_before = mkl(1) if mkl is not None else None
    try:
        yield True
    finally:
        put(before)
        if mkl is not None:
            mkl(mkl_before)


__all__ = ["one_thread"]
