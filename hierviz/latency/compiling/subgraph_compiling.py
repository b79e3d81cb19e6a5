"""Compiling subgraphs: each subgraph of the split module, in graph order, with the tensors it
really receives, through the compile cache; a failure raises or falls back to eager PyTorch.

Every subgraph gets a `SubgraphRecord` saying what ran: the backend asked for and the one that
ran, and whether it was compiled now, taken from the cache, fell back, or is a PyTorch subgraph.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch
from torch.fx import GraphModule, Node

from hierviz.building.frozen_random import FrozenRandom
from hierviz.errors import MeasureError
from hierviz.latency.compiling import compile_cache as cache_mod
from hierviz.capturing.graph_codec import fetch_attr
from hierviz.latency.compiling.lift import Lifted, bake, lift, on_device
from hierviz.latency.compiling.compile_plan import Slot
from hierviz.latency.measurement import SubgraphRecord, fallback_note
from hierviz.latency.timing import synchronize
from hierviz.partitioner import FALLBACK

logger = logging.getLogger(__name__)


def short(exc: BaseException, limit: int = 600) -> str:
    """'TypeName: first line of the message', at most `limit` characters."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    msg = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return msg if len(msg) <= limit else msg[:limit] + " ..."


class Runner(torch.nn.Module):
    """Calls a compiled (or eager) subgraph with this partition's weights and gives back what
    the split module's subgraph returned (one value, or a tuple)."""

    def __init__(self, fn: Callable[..., Any], weights: Sequence[torch.Tensor], single: bool,
                 tag: str, status: str) -> None:
        super().__init__()
        self.fn = fn
        self.weights = tuple(weights)
        self.single = single
        self.tag = tag
        self.status = status

    def forward(self, *args: Any) -> Any:
        out = self.fn(*args, *self.weights)
        if not isinstance(out, (tuple, list)):  # e.g. a TensorRT module with one output
            out = (out,)
        return out[0] if self.single else tuple(out)

    def extra_repr(self) -> str:
        return f"{self.tag}: {self.status}"


class Progress:
    """A tqdm bar (`progress=True`) or a callback `(stage, done, total)`, stepped per stage."""

    def __init__(self, progress: Any, total: int) -> None:
        self.total = total
        self.done = 0
        self.callback: Callable[[str, int, int], Any] | None = None
        self.bar = None
        if progress is True:
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=total, desc="measure", leave=False)
            except ImportError:  # pragma: no cover
                self.callback = lambda stage, done, total: print(f"[{done}/{total}] {stage}")
        elif callable(progress):
            self.callback = progress

    def step(self, stage: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(stage[:40])
            self.bar.update(1)
        if self.callback is not None:
            self.callback(stage, self.done, self.total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@dataclass
class Built:
    """The runners and records of one build, with its cache counts and notes."""

    runners: dict[str, Runner] = field(default_factory=dict)
    records: dict[str, SubgraphRecord] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    cache_hits: int = 0
    cache_misses: int = 0
    compile_s: float = 0.0
    compile_state: dict[str, str] = field(default_factory=dict)
    unsaved: dict[str, str] = field(default_factory=dict)  # tag -> why its artifact was not written
    frozen_random: tuple[FrozenRandom, ...] = ()  # the random ops its engines hold (named across graphs: summed)


class Builder:
    """Walks the split module's graph once, compiling each subgraph (through the cache) with
    the tensors it really receives, in order."""

    def __init__(self, module: GraphModule, slots: list[Slot], device: torch.device, store: cache_mod.CompileCache,
                 directory: Path | None, options: Mapping[str, Any], on_error: str, progress: Progress) -> None:
        self.module = module
        self.slots = {s.name: s for s in slots}
        self.device = device
        self.store = store
        self.directory = directory
        self.options = options
        self.on_error = on_error
        self.progress = progress
        self.out = Built()

    def run(self, inputs: Sequence[Any], observe: Callable[..., Any] | None = None) -> tuple[Built, Any]:
        """Compile every subgraph; returns the build and the split model's output on `inputs`.
        `observe(node, value, runner)` is called after each node of the split module's graph
        with the value the split model computed for it (the output node: the output) and, for
        a subgraph call, its runner (hv.numerics checks each value as it is made)."""
        env: dict[Node, Any] = {}
        placeholders = [n for n in self.module.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(inputs):
            raise MeasureError(f"the graph takes {len(placeholders)} input(s) "
                               f"({', '.join(n.name for n in placeholders)}) but example_inputs has "
                               f"{len(inputs)} tensor(s); pass the inputs the model was captured with.")
        value = lambda a: torch.fx.node.map_arg(a, lambda n: env[n])  # noqa: E731
        position = {n: i for i, n in enumerate(placeholders)}
        result: Any = None
        left = {n: len(n.users) for n in self.module.graph.nodes}
        for node in self.module.graph.nodes:
            if node.op == "placeholder":
                env[node] = inputs[position[node]]
            elif node.op == "get_attr":
                attr = fetch_attr(self.module, node.target)
                env[node] = on_device(attr, self.device) if isinstance(attr, torch.Tensor) else attr
            runner = None
            if node.op == "call_module":
                args, kwargs = value(node.args), value(node.kwargs)
                runner = self._build(self.slots[str(node.target)], args)
                env[node] = self._first_run(runner, args, kwargs)
            elif node.op == "call_function":
                env[node] = node.target(*value(node.args), **value(node.kwargs))
            elif node.op == "call_method":
                args = value(node.args)
                env[node] = getattr(args[0], node.target)(*args[1:], **value(node.kwargs))
            elif node.op == "output":
                result = value(node.args[0])
            if observe is not None:
                observe(node, result if node.op == "output" else env.get(node), runner)
            for used in node.all_input_nodes:  # a value goes once its last reader has run
                left[used] -= 1
                if left[used] == 0:
                    env.pop(used, None)
        note = fallback_note(list(self.out.records.values()))
        if note:
            self.out.warnings.insert(0, note)
        return self.out, result

    def _first_run(self, runner: Runner, args: tuple, kwargs: dict) -> Any:
        try:
            return runner(*args, **kwargs)
        except Exception as exc:
            raise MeasureError(f"subgraph {runner.tag} failed to run ({runner.status}): {short(exc)}") from exc

    def _record(self, slot: Slot, status: str, n_in: int, n_out: int, **kw: Any) -> SubgraphRecord:
        ran = slot.backend if status in ("compiled", "cached") else FALLBACK
        return SubgraphRecord(tag=slot.name, asked=slot.backend, ran=ran, status=status,
                              compile_s=kw.pop("compile_s", 0.0), ops=slot.ops, inputs=n_in, outputs=n_out, **kw)

    def _build(self, slot: Slot, args: tuple) -> Runner:
        sub = fetch_attr(self.module, slot.name)
        baked = slot.is_acc and slot.compiler is not None and not slot.compiler.lifts_weights
        lifted = lift(sub, self.device, keep_meta=baked)
        n_in = len(args)
        if slot.refused is not None:
            self.progress.step(f"{slot.name}: {slot.backend} unavailable")
            return self._failed(slot, args, "", slot.refused, 0.0, cached=False, unavailable=True)
        if not slot.is_acc or slot.compiler is None:
            self.progress.step(f"{slot.name}: eager")
            return self._keep(Runner(lifted.gm, lifted.weights, lifted.single, slot.name, "eager"),
                              self._record(slot, "eager", n_in, lifted.n_outputs))
        compiler = slot.compiler
        options = self.options.get(slot.backend)
        try:
            key = cache_mod.cache_key(lifted, args, compiler, options, self.device)
        except MeasureError:
            raise
        except Exception as exc:
            raise MeasureError(f"could not describe subgraph {slot.name} for the compile cache: {short(exc)}") from exc
        weights = lifted.weights if compiler.lifts_weights else ()
        entry = self.store.get(key, compiler, self.directory)
        if entry is not None and entry.error is not None:
            self._count(hit=True)
            self.progress.step(f"{slot.name}: remembered failure")
            return self._failed(slot, args, key, entry.error, 0.0, cached=True)
        if entry is not None and entry.origin == "disk":  # compiled in this process: it ran already
            try:
                check_outputs(entry.compiled(*args, *weights), lifted)
            except Exception:  # e.g. a disk artifact this process cannot run: compiled again
                logger.debug("the cached %s artifact of %s did not run; compiling again", slot.backend, slot.name,
                             exc_info=True)
                self.store.drop(key)
                entry = None
        if entry is not None:
            self._count(hit=True)
            self.progress.step(f"{slot.name}: cached")
            return self._keep(Runner(entry.compiled, weights, lifted.single, slot.name, "cached"),
                              self._record(slot, "cached", n_in, lifted.n_outputs, key=key, cached=True))
        self._count(hit=False)
        if slot.backend not in self.out.compile_state:  # before this call's first compile writes any cache
            self.out.compile_state[slot.backend] = compiler.state()
        start = time.perf_counter()
        try:
            gm = lifted.gm if compiler.lifts_weights else bake(lifted, args)
            extra = {"name": slot.name} if compiler.named else {}
            artifact = compiler.compile(gm, list(args) + list(weights), options, self.directory is not None, **extra)
            if artifact is None or not callable(artifact):
                raise TypeError(f"the {slot.backend} compiler returned {type(artifact).__name__}, not a callable")
            runner = Runner(artifact, weights, lifted.single, slot.name, "compiled")
            check_outputs(artifact(*args, *weights), lifted)
            synchronize(self.device)
        except Exception as exc:  # whatever the backend's compiler raised is the subgraph's failure
            logger.debug("%s could not compile %s", slot.backend, slot.name, exc_info=True)
            elapsed = time.perf_counter() - start
            self.out.compile_s += elapsed
            error = short(exc)
            self.store.put(cache_mod.Entry(key, slot.backend, None, elapsed, compiler.lifts_weights,
                                           error=error, first_tag=slot.name))
            self.progress.step(f"{slot.name}: failed")
            return self._failed(slot, args, key, error, elapsed, cached=False, cause=exc)
        elapsed = time.perf_counter() - start
        self.out.compile_s += elapsed
        entry = cache_mod.Entry(key, slot.backend, artifact, elapsed, compiler.lifts_weights, first_tag=slot.name)
        self.store.put(entry)
        if self.directory is not None:
            why = cache_mod.save_entry(entry, artifact, compiler, self.directory)
            if why:
                self.out.unsaved[slot.name] = why
                self.out.warnings.append(f"{slot.name} was not written to the disk cache: {why}")
        self.progress.step(f"{slot.name}: compiled in {elapsed:.1f} s")
        return self._keep(runner, self._record(slot, "compiled", n_in, lifted.n_outputs, key=key, compile_s=elapsed))

    def _count(self, hit: bool) -> None:
        if hit:
            self.out.cache_hits += 1
        else:
            self.out.cache_misses += 1
        self.store.count(hit=hit)

    def _failed(self, slot: Slot, args: tuple, key: str, error: str, elapsed: float,
                cached: bool, cause: BaseException | None = None, unavailable: bool = False) -> Runner:
        when = " (an earlier compile of the same subgraph, remembered by the compile cache)" if cached else ""
        did = "was not compiled" if unavailable else f"failed to compile{when}"
        message = f"subgraph {slot.name} ({slot.backend}, {slot.ops} ops) {did}: {error}"
        if self.on_error == "raise":
            raise MeasureError(message + "\nPass on_error='fallback' to run failing subgraphs in eager "
                               "PyTorch and measure the rest.") from cause
        self.out.fallbacks.append(slot.name)  # said once for all of them: run() adds fallback_note
        fresh = lift(fetch_attr(self.module, slot.name), self.device)  # the compiler may have changed the other
        return self._keep(Runner(fresh.gm, fresh.weights, fresh.single, slot.name, "fallback"),
                          self._record(slot, "fallback", len(args), fresh.n_outputs, key=key, compile_s=elapsed,
                                       cached=cached, error=error))

    def _keep(self, runner: Runner, record: SubgraphRecord) -> Runner:
        self.out.runners[record.tag] = runner
        self.out.records[record.tag] = record
        return runner


def check_outputs(out: Any, lifted: Lifted) -> None:
    n = len(out) if isinstance(out, (tuple, list)) else 1
    if n != lifted.n_outputs:
        raise RuntimeError(f"the compiled subgraph returned {n} value(s), the subgraph has {lifted.n_outputs}")


__all__ = ["Builder", "Built", "Runner", "Progress", "check_outputs", "short"]
