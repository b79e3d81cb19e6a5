"""Baselines a split model is compared with: the user's `nn.Module` run eagerly, and the whole
model through `torch.compile` (TorchInductor), timed like the split model.

The user's model is never modified: it is timed as it is when it is in eval mode on the
timing device, and a deep copy is timed otherwise (a BatchNorm in train mode would update
its running statistics; `.to(device)` would move the user's weights).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_map

from hierviz.errors import MeasureError
from hierviz.latency.timing import Stats, time_fn


@dataclass
class Baseline:
    """One baseline's timing: `stats` (None when it could not run, then `error` says why),
    `compile_s` (torch.compile's first call), and `outputs` from one call."""

    name: str
    stats: Stats | None
    compile_s: float = 0.0
    error: str | None = None
    outputs: Any = None

    @property
    def median_ms(self) -> float | None:
        return None if self.stats is None else self.stats.median_ms


def runnable_model(model: Any) -> Callable[..., Any] | None:
    """What to call for `model` run eagerly: an nn.Module (or an ExportedProgram's module);
    None for a bare aten GraphModule from hv.capture (its eager time is the graph's)."""
    if isinstance(model, torch.export.ExportedProgram):
        return model.module()
    if isinstance(model, torch.fx.GraphModule):
        return None
    if isinstance(model, torch.nn.Module):
        return model
    return None


def _device_of(module: torch.nn.Module) -> torch.device | None:
    for t in (*module.parameters(), *module.buffers()):
        return t.device
    return None


def safe_copy(model: torch.nn.Module, device: torch.device, updates: bool = False) -> torch.nn.Module:
    """`model` itself when running it cannot change it (eval mode, already on `device`, no
    in-place buffer updates in forward: `updates`), else a deep copy moved to `device`."""
    where = _device_of(model)
    training = any(m.training for m in model.modules())
    if not training and not updates and (where is None or where == device or (where.type == device.type == "cpu")):
        return model
    try:
        return copy.deepcopy(model).to(device)
    except Exception as exc:  # noqa: BLE001 - e.g. a model holding an un-copyable handle
        raise MeasureError(f"could not copy the model to time it without changing it: {type(exc).__name__}: "
                           f"{exc}. Put the model in eval mode on the measuring device (model.eval().to(device)).") from exc


def _short(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300]}" if text else type(exc).__name__


def time_model(model: Any, example_inputs: Any, device: torch.device, *, warmup: int, iters: int,
               torch_compile: bool = False, updates: tuple = ((), ())) -> dict[str, Baseline]:
    """{"eager": ..., "torch_compile": ...}: the user's model run eagerly and (when
    `torch_compile`) through `torch.compile`, timed with `time_fn`. Failures are recorded in
    the Baseline's `error`, never raised: a baseline is context for the split model's figure.
    `updates` is hierviz.capturing.updates_of(graph): (buffers, inputs) forward updates in
    place; then a copy of the model runs, on copies of the inputs, so neither is changed."""
    out: dict[str, Baseline] = {}
    fn = runnable_model(model)
    if fn is None:
        return out
    buffers, written = updates
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    inputs = tree_map(lambda x: (x.to(device).clone() if written else x.to(device)) if isinstance(x, torch.Tensor)
                      else x, args)
    try:
        module = safe_copy(fn, device, bool(buffers)) if isinstance(fn, torch.nn.Module) else fn
    except MeasureError as exc:
        out["eager"] = Baseline("eager", None, error=str(exc))
        return out
    with torch.no_grad():
        try:
            outputs = module(*inputs)
            out["eager"] = Baseline("eager", time_fn(lambda: module(*inputs), device, warmup=max(1, warmup), iters=iters),
                                    outputs=outputs)
        except Exception as exc:  # noqa: BLE001
            out["eager"] = Baseline("eager", None, error=f"the model failed to run eagerly on {device}: {_short(exc)}")
        if torch_compile:
            out["torch_compile"] = _time_compiled(module, inputs, device, warmup, iters)
    return out


def _time_compiled(module: Any, inputs: tuple, device: torch.device, warmup: int, iters: int) -> Baseline:
    try:
        compiled = torch.compile(module)
        start = time.perf_counter()
        outputs = compiled(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        compile_s = time.perf_counter() - start
        stats = time_fn(lambda: compiled(*inputs), device, warmup=warmup, iters=iters)
        return Baseline("torch_compile", stats, compile_s=compile_s, outputs=outputs)
    except Exception as exc:  # noqa: BLE001
        return Baseline("torch_compile", None, error=f"torch.compile failed: {_short(exc)}")


__all__ = ["Baseline", "time_model", "safe_copy", "runnable_model"]
