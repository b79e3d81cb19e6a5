"""Before anything is compiled: the device, and the subgraph calls of the split module with the
compiler of each, refusing at once (naming the subgraphs) what cannot be compiled here.

TensorRT subgraphs need a CUDA GPU that the installed TensorRT can build for; when it cannot
(no GPU, no torch_tensorrt, or e.g. TensorRT-RTX on an H100/H200), `plan` raises
`hv.TensorRTUnavailableError` with the reason and the fix before any compile starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import torch

from hierviz.errors import WITHOUT_TENSORRT, MeasureError, TensorRTUnavailableError
from hierviz.latency.compiling.backend_compilers import Compiler, get_compiler
from hierviz.partitioner import FALLBACK, Partition, parse_tag


@dataclass
class Slot:
    """One call of a subgraph in the split module, with the compiler for its backend."""

    name: str
    backend: str
    is_acc: bool
    ops: int
    compiler: Compiler | None = None
    refused: str | None = None  # why its backend cannot compile here (on_error="fallback": it runs eagerly)


def resolve_device(device: Any, partition: Partition | None = None) -> torch.device:
    """`device` as a torch.device ('cuda' when a GPU is there, else 'cpu'; a bare 'cuda' gets
    the current index); MeasureError for what is not a usable device here, and
    TensorRTUnavailableError (a MeasureError) for CUDA asked for without one when `partition`
    has TensorRT subgraphs, as for TensorRT subgraphs on the CPU."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError, OverflowError):
        raise MeasureError(f"device={device!r} is not a device. Use 'cpu' or 'cuda'.") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        trt = any(getattr(sg, "backend", None) == "tensorrt" for sg in getattr(partition, "subgraphs", ()))
        raise (TensorRTUnavailableError if trt else MeasureError)(
            f"device={device!r} was requested but no CUDA device is available here"
            + ("; TensorRT engines need an NVIDIA GPU: measure on a GPU machine, or use device='cpu' and "
               f"partition without TensorRT: {WITHOUT_TENSORRT}." if trt else
               "; use device='cpu' (the default without a GPU)."))
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    if dev.type == "cuda" and dev.index >= torch.cuda.device_count():
        raise MeasureError(f"device={device!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return dev


def names(tags: list[str], limit: int = 8) -> str:
    shown = ", ".join(tags[:limit])
    return shown + (f" and {len(tags) - limit} more" if len(tags) > limit else "")


def _slot_of(name: str, by_tag: Mapping[str, Any]) -> Slot:
    sg = by_tag.get(name)
    if sg is not None:
        return Slot(name, sg.backend, bool(sg.is_acc), int(getattr(sg, "compute_ops", len(sg.nodes))))
    is_acc, backend = parse_tag(name)
    return Slot(name, backend if is_acc else FALLBACK, is_acc, 0)


def plan(partition: Partition, device: torch.device, compilers: Mapping[str, Any] | None = None,
         on_error: str = "raise") -> list[Slot]:
    """The subgraph calls in graph order, each with its compiler. Raises before anything is
    compiled: TensorRTUnavailableError for TensorRT subgraphs that cannot be built here,
    MeasureError for other backends that need CUDA or are unavailable, or have no compiler.
    With `on_error="fallback"` an unavailable backend is not an error: its slots carry the
    reason in `refused` and run in eager PyTorch (counted as fallbacks)."""
    by_tag = {sg.tag: sg for sg in partition.subgraphs}
    slots = [_slot_of(str(n.target), by_tag) for n in partition.module.graph.nodes if n.op == "call_module"]
    by_backend: dict[str, list[Slot]] = {}
    unknown: dict[str, list[str]] = {}
    overrides = dict(compilers) if compilers else None
    for slot in slots:
        if not slot.is_acc:
            continue
        slot.compiler = get_compiler(slot.backend, overrides)
        if slot.compiler is None:
            unknown.setdefault(slot.backend, []).append(slot.name)
        else:
            by_backend.setdefault(slot.backend, []).append(slot)
    for backend, group in by_backend.items():
        refusal = _refusal(backend, group, device)
        if refusal is None:
            continue
        error, why = refusal
        if on_error == "fallback":
            for slot in group:
                slot.refused = why  # the fallback note names each subgraph once (result.fallback_note)
            continue
        tags = [s.name for s in group]
        raise error(f"{why}; {len(tags)} {backend} subgraph(s) cannot be compiled: {names(tags)}. {_fix(backend)} "
                    "Or pass on_error=\"fallback\" to run these subgraphs in eager PyTorch and measure the rest.")
    if unknown:
        lines = [f"no compiler for backend {backend!r} (subgraphs {names(tags)})" for backend, tags in unknown.items()]
        raise MeasureError("; ".join(lines) + ". Register one with hierviz.latency.register_compiler("
                           "name, fn) or pass compilers={name: fn} to hv.measure.")
    return slots


def _fix(backend: str) -> str:
    if backend == "tensorrt":
        return ("Measure on a machine with an NVIDIA GPU that TensorRT builds for (device='cuda'), or partition "
                f"without TensorRT: {WITHOUT_TENSORRT}.")
    return f"Fix that, or partition without the {backend!r} backend."


def _refusal(backend: str, group: list[Slot], device: torch.device) -> tuple[type, str] | None:
    """(error class, why) when `backend` cannot compile `group` for `device`, else None."""
    compiler = group[0].compiler
    assert compiler is not None, "a slot grouped by backend has its compiler"
    label = "TensorRT" if backend == "tensorrt" else f"the {backend!r} backend"
    unavailable = TensorRTUnavailableError if backend == "tensorrt" else MeasureError
    if compiler.needs_cuda and device.type != "cuda":
        cuda = torch.cuda.is_available()
        why = "no CUDA device is available here" if not cuda else f"device={str(device)!r} was requested"
        return (unavailable if not cuda else MeasureError), f"{label} needs an NVIDIA GPU (CUDA), but {why}"
    why_not = compiler.available(device)
    if why_not:
        return unavailable, f"{label} cannot compile here: {why_not}"
    return None


__all__ = ["Slot", "plan", "resolve_device", "names"]
