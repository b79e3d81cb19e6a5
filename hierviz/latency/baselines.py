"""Baselines a split model is compared with: the user's `nn.Module` run eagerly, and the whole
model through `torch.compile` (TorchInductor), timed like the split model.

The user's model is never modified: it is timed as it is when it is in eval mode on the
timing device, and a deep copy is timed otherwise (a BatchNorm in train mode would update
its running statistics; `.to(device)` would move the user's weights).
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_map

from hierviz.errors import MeasureError
from hierviz.latency.idle_workers import wait_for_idle_workers
from hierviz.latency.timing import Stats, time_fn

logger = logging.getLogger(__name__)


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
    except Exception as exc:
        raise MeasureError(f"could not copy the model to time it without changing it: {type(exc).__name__}: "
                           f"{exc}. Put the model in eval mode on the measuring device "
                           "(model.eval().to(device)).") from exc


def _short(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300]}" if text else type(exc).__name__


@dataclass
class EagerCall:
    """The user's model ready to run eagerly: `call()` runs it once on the inputs (on a copy
    when running it could change it); `module` and `inputs` for torch.compile; `outputs` from
    one call; or `error` saying why it cannot run."""

    call: Callable[[], Any] | None = None
    module: Any = None
    inputs: tuple = ()
    outputs: Any = None
    error: str | None = None


def eager_call(model: Any, example_inputs: Any, device: torch.device, updates: tuple = ((), ())) -> EagerCall | None:
    """The user's model (an nn.Module or ExportedProgram) ready to be timed eagerly on `device`,
    its first call made (a failure is recorded in `error`, never raised); None for a bare graph.
    `updates` is hierviz.capturing.aten_capture.updates_of(graph): (buffers, inputs) forward updates in
    place; then a copy of the model runs, on copies of the inputs, so neither is changed."""
    fn = runnable_model(model)
    if fn is None:
        return None
    buffers, written = updates
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    inputs = tree_map(lambda x: (x.to(device).clone() if written else x.to(device)) if isinstance(x, torch.Tensor)
                      else x, args)
    try:
        module = safe_copy(fn, device, bool(buffers)) if isinstance(fn, torch.nn.Module) else fn
    except MeasureError as exc:
        return EagerCall(error=str(exc))
    try:
        with torch.no_grad():
            outputs = module(*inputs)
    except Exception as exc:  # the user's model: its failure is the eager baseline's answer
        logger.debug("the model failed to run eagerly on %s", device, exc_info=True)
        return EagerCall(module=module, inputs=inputs,
                         error=f"the model failed to run eagerly on {device}: {_short(exc)}")
    return EagerCall(lambda: module(*inputs), module, inputs, outputs)


def time_model(model: Any, example_inputs: Any, device: torch.device, *, warmup: int, iters: int,
               torch_compile: bool = False, updates: tuple = ((), ())) -> dict[str, Baseline]:
    """{"eager": ..., "torch_compile": ...}: the user's model run eagerly and (when
    `torch_compile`) through `torch.compile`, timed with `time_fn` once TorchInductor's compile
    workers are idle. Failures are recorded in the Baseline's `error`, never raised: a baseline
    is context for the split model's figure (see `eager_call` for `updates`)."""
    out: dict[str, Baseline] = {}
    ready = eager_call(model, example_inputs, device, updates)
    if ready is None:
        return out
    if ready.call is None:
        out["eager"] = Baseline("eager", None, error=ready.error)
        if ready.module is None:
            return out
    with torch.no_grad():
        if ready.call is not None:
            wait_for_idle_workers()
            out["eager"] = Baseline("eager", time_fn(ready.call, device, warmup=max(1, warmup), iters=iters),
                                    outputs=ready.outputs)
        if torch_compile:
            out["torch_compile"] = time_compiled(ready.module, ready.inputs, device, warmup, iters)
    return out


def time_compiled(module: Any, inputs: tuple, device: torch.device, warmup: int, iters: int) -> Baseline:
    try:
        compiled = torch.compile(module)
        start = time.perf_counter()
        outputs = compiled(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        compile_s = time.perf_counter() - start
        wait_for_idle_workers()  # its own compile workers
        stats = time_fn(lambda: compiled(*inputs), device, warmup=warmup, iters=iters)
        return Baseline("torch_compile", stats, compile_s=compile_s, outputs=outputs)
    except Exception as exc:  # torch.compile on the user's model: its failure is this baseline's answer
        logger.debug("the torch.compile baseline failed", exc_info=True)
        return Baseline("torch_compile", None, error=f"torch.compile failed: {_short(exc)}")


__all__ = ["Baseline", "EagerCall", "eager_call", "time_model", "time_compiled", "safe_copy", "runnable_model"]
