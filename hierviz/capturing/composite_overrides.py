"""Composite ops decomposed by hierviz's rules inside the traces of one thread's lowering.

A trace that does not keep composite ops (`make_fx`: the AOT export of torch.compile's path,
Torch-TensorRT's own retraces such as its complex-number pass) decomposes a
CompositeImplicitAutograd op by its kernel, whatever its decomposition table says: the table
only reaches ops that get past autograd. The way in is the op's Python kernel for that key
(`OpOverload.py_kernels`, which torch's Python dispatcher, on in these traces, runs instead of
the C++ kernel), as `torch.export` itself overrides composite ops while it decomposes.

`CompositeOverrides` installs, for each op with a rule, a Python kernel that runs the rule in a
thread inside `overriding(rules)` and the op's own kernel (its earlier Python kernel, or the C++
one) in every other thread; the first thread in installs them, the last one out puts back the
kernels that were there.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator, Mapping

import torch

CIA = torch._C.DispatchKey.CompositeImplicitAutograd
AUTOGRAD = torch._C.DispatchKey.Autograd


class CompositeOverrides:
    """Python kernels for composite ops that run a thread's rule while the thread asks for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._saved: dict[Any, dict] = {}
        self._thread = threading.local()  # .rules: this thread's rules, op -> decomposition

    def _kernel(self, op: Any, own: Callable[..., Any]) -> Callable[..., Any]:
        def kernel(*args: Any, **kwargs: Any) -> Any:
            rules: Mapping[Any, Callable[..., Any]] | None = getattr(self._thread, "rules", None)
            rule = rules.get(op) if rules is not None else None
            return rule(*args, **kwargs) if rule is not None else own(*args, **kwargs)
        return kernel

    def _install(self, ops: list[Any]) -> None:
        for op in ops:
            saved = self._saved[op] = dict(op.py_kernels)
            cia = saved.get(CIA)
            op.py_kernels[CIA] = self._kernel(op, cia if callable(cia) else
                                              (lambda *a, _op=op, **k: _op._op_dk(CIA, *a, **k)))
            if callable(saved.get(AUTOGRAD)):  # its decomposition is its autograd kernel too (torch's lstm)
                op.py_kernels[AUTOGRAD] = self._kernel(op, saved[AUTOGRAD])
            op._dispatch_cache.clear()

    def _restore(self) -> None:
        for op, kernels in self._saved.items():
            op.py_kernels.clear()
            op.py_kernels.update(kernels)
            op._dispatch_cache.clear()
        self._saved.clear()

    @contextlib.contextmanager
    def overriding(self, rules: Mapping[Any, Callable[..., Any]] | None) -> Iterator[None]:
        """While the block runs in this thread, each op of `rules` decomposes by its rule in its traces
        (None or empty: nothing changes)."""
        if not rules:
            yield
            return
        with self._lock:
            if not self._users:
                self._install(list(rules))
            self._users += 1
        before = getattr(self._thread, "rules", None)
        self._thread.rules = rules
        try:
            yield
        finally:
            self._thread.rules = before
            with self._lock:
                self._users -= 1
                if not self._users:
                    self._restore()


__all__ = ["CompositeOverrides"]
