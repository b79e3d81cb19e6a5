"""hv.measure: compile each subgraph with its backend, time the split model against eager, check it.

The partition is never modified. Each subgraph of `partition.module` is lifted (its weights
become inputs, see lift.py), compiled through the cache in graph order with the real tensors
it receives, and wrapped in a small module; a new top-level GraphModule with the split
module's graph calls those wrappers. The eager baseline is the lifted unsplit graph.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch
from torch.fx import GraphModule, Node
from torch.utils._pytree import tree_leaves

from hierviz.errors import MeasureError
from hierviz.latency import cache as cache_mod
from hierviz.latency.compilers import Compiler, get_compiler
from hierviz.latency.lift import Lifted, _set_path, bake, fetch_attr, lift, on_device
from hierviz.latency.result import PER_SUBGRAPH_COLUMNS, Measurement, MeasureWarning
from hierviz.latency.timing import NOISY_CV, Stats, synchronize, time_fn

FALLBACK = "torch"
ON_ERROR = ("raise", "fallback")

# Tolerances by the reference's dtype: an output matches when
#   max |out - ref| <= atol + rtol * max |ref|
# (scaled by the tensor's magnitude, so TF32 / reduced-precision kernels that are accurate
# relative to the values are not flagged elementwise near zero). Integers and bools: exact.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-9),
    torch.float32: (5e-3, 1e-5),
    torch.float16: (2e-2, 1e-3),
    torch.bfloat16: (4e-2, 1e-3),
}
_DEFAULT_TOL = (5e-3, 1e-5)


@dataclass
class _Slot:
    """One call of a subgraph in the split module."""

    name: str
    backend: str
    is_acc: bool
    ops: int
    compiler: Compiler | None = None


@dataclass
class _Record:
    tag: str
    backend: str
    status: str  # compiled, cached, eager, fallback
    compile_s: float
    cached: bool
    ops: int
    inputs: int
    outputs: int
    key: str = ""
    stats: Stats | None = None


class _Runner(torch.nn.Module):
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


def resolve_device(device: Any) -> torch.device:
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise MeasureError(f"device={device!r} is not a device: {exc}. Use 'cpu' or 'cuda'.") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise MeasureError(f"device={device!r} was requested but no CUDA device is available here; "
                           "use device='cpu' (the default without a GPU).")
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    return dev


def _slot_of(name: str, by_tag: Mapping[str, Any]) -> _Slot:
    sg = by_tag.get(name)
    if sg is not None:
        return _Slot(name, sg.backend, bool(sg.is_acc), int(getattr(sg, "compute_ops", len(sg.nodes))))
    if name.startswith("_run_on_acc_"):
        backend = name[len("_run_on_acc_"):].rsplit("_", 1)[0]
        return _Slot(name, backend, True, 0)
    return _Slot(name, FALLBACK, False, 0)


def _plan(partition: Any, device: torch.device, compilers: Mapping[str, Any] | None) -> list[_Slot]:
    """The subgraph calls in graph order, each with its compiler; raises MeasureError, before
    anything is compiled, for subgraphs that cannot be compiled here at all."""
    by_tag = {sg.tag: sg for sg in partition.subgraphs}
    slots = [_slot_of(str(n.target), by_tag) for n in partition.module.graph.nodes if n.op == "call_module"]
    no_cuda: dict[str, list[str]] = {}
    unavailable: dict[str, tuple[str, list[str]]] = {}
    unknown: dict[str, list[str]] = {}
    overrides = dict(compilers) if compilers else None
    for slot in slots:
        if not slot.is_acc:
            continue
        compiler = get_compiler(slot.backend, overrides)
        if compiler is None:
            unknown.setdefault(slot.backend, []).append(slot.name)
            continue
        slot.compiler = compiler
        if compiler.needs_cuda and (device.type != "cuda" or not torch.cuda.is_available()):
            no_cuda.setdefault(slot.backend, []).append(slot.name)
    why_not: dict[str, str | None] = {}
    for slot in slots:
        if slot.compiler is not None and slot.backend not in no_cuda:
            if slot.backend not in why_not:
                why_not[slot.backend] = slot.compiler.available()
            why = why_not[slot.backend]
            if why:
                unavailable.setdefault(slot.backend, (why, []))[1].append(slot.name)
    if no_cuda:
        where = ("no CUDA device is available here" if not torch.cuda.is_available()
                 else f"device={str(device)!r} was requested")
        lines = []
        for backend, tags in no_cuda.items():
            label = "TensorRT" if backend == "tensorrt" else f"the {backend!r} backend"
            lines.append(f"{label} needs an NVIDIA GPU (CUDA), but {where}; "
                         f"{len(tags)} {backend} subgraph(s) cannot be compiled: {_names(tags)}.")
        raise MeasureError(" ".join(lines) + " Measure on a machine with an NVIDIA GPU (device='cuda'), "
                           "or partition without it, e.g. hv.partition(gm, priority=('inductor',)).")
    if unavailable:
        lines = [f"{backend} subgraph(s) {_names(tags)} cannot be compiled: {why}."
                 for backend, (why, tags) in unavailable.items()]
        raise MeasureError(" ".join(lines) + " Install the backend, or partition without it.")
    if unknown:
        lines = [f"no compiler for backend {backend!r} (subgraphs {_names(tags)})" for backend, tags in unknown.items()]
        raise MeasureError("; ".join(lines) + ". Register one with hierviz.latency.register_compiler("
                           "name, fn) or pass compilers={name: fn} to hv.measure.")
    return slots


def _names(tags: list[str], limit: int = 8) -> str:
    shown = ", ".join(tags[:limit])
    return shown + (f" and {len(tags) - limit} more" if len(tags) > limit else "")


def _short(exc: BaseException, limit: int = 600) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    msg = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return msg if len(msg) <= limit else msg[:limit] + " ..."


class _Progress:
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
class _Build:
    runners: dict[str, _Runner] = field(default_factory=dict)
    records: dict[str, _Record] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    hits: int = 0
    misses: int = 0
    compile_s: float = 0.0


class _Builder:
    """Walks the split module's graph once, compiling each subgraph (through the cache) with
    the tensors it really receives, in order."""

    def __init__(self, partition: Any, slots: list[_Slot], device: torch.device, store: cache_mod.CompileCache,
                 directory: Path | None, options: Mapping[str, Any], on_error: str, progress: _Progress) -> None:
        self.module: GraphModule = partition.module
        self.slots = {s.name: s for s in slots}
        self.device = device
        self.store = store
        self.directory = directory
        self.options = options
        self.on_error = on_error
        self.progress = progress
        self.out = _Build()

    def run(self, inputs: Sequence[Any]) -> tuple[_Build, Any]:
        env: dict[Node, Any] = {}
        placeholders = [n for n in self.module.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(inputs):
            raise MeasureError(f"the graph takes {len(placeholders)} input(s) "
                               f"({', '.join(n.name for n in placeholders)}) but example_inputs has "
                               f"{len(inputs)} tensor(s); pass the inputs the model was captured with.")
        value = lambda a: torch.fx.node.map_arg(a, lambda n: env[n])  # noqa: E731
        position = {n: i for i, n in enumerate(placeholders)}
        result: Any = None
        for node in self.module.graph.nodes:
            if node.op == "placeholder":
                env[node] = inputs[position[node]]
            elif node.op == "get_attr":
                attr = fetch_attr(self.module, node.target)
                env[node] = on_device(attr, self.device) if isinstance(attr, torch.Tensor) else attr
            elif node.op == "call_module":
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
        return self.out, result

    def _first_run(self, runner: _Runner, args: tuple, kwargs: dict) -> Any:
        try:
            return runner(*args, **kwargs)
        except Exception as exc:
            raise MeasureError(f"subgraph {runner.tag} failed to run ({runner.status}): {_short(exc)}") from exc

    def _build(self, slot: _Slot, args: tuple) -> _Runner:
        sub = fetch_attr(self.module, slot.name)
        baked = slot.is_acc and slot.compiler is not None and not slot.compiler.lifts_weights
        lifted = lift(sub, self.device, keep_meta=baked)
        n_in = len(args)
        if not slot.is_acc or slot.compiler is None:
            self.progress.step(f"{slot.name}: eager")
            return self._keep(slot, _Runner(lifted.gm, lifted.weights, lifted.single, slot.name, "eager"),
                              _Record(slot.name, slot.backend, "eager", 0.0, False, slot.ops, n_in, lifted.n_outputs))
        compiler = slot.compiler
        options = self.options.get(slot.backend)
        try:
            key = cache_mod.cache_key(lifted, args, compiler, options, self.device)
        except MeasureError:
            raise
        except Exception as exc:
            raise MeasureError(f"could not describe subgraph {slot.name} for the compile cache: {_short(exc)}") from exc
        weights = lifted.weights if compiler.lifts_weights else ()
        entry = self.store.get(key, compiler, self.directory)
        if entry is not None and entry.error is not None:
            self.out.hits += 1
            self.store.count(hit=True)
            self.progress.step(f"{slot.name}: remembered failure")
            return self._failed(slot, args, key, entry.error, 0.0, cached=True)
        if entry is not None:
            try:
                _check_outputs(entry.fn(*args, *weights), lifted)
            except Exception:  # noqa: BLE001 - e.g. a disk artifact this process cannot run: recompile
                self.store.drop(key)
                entry = None
        if entry is not None:
            self.out.hits += 1
            self.store.count(hit=True)
            self.progress.step(f"{slot.name}: cached")
            return self._keep(slot, _Runner(entry.fn, weights, lifted.single, slot.name, "cached"),
                              _Record(slot.name, slot.backend, "cached", 0.0, True, slot.ops, n_in,
                                      lifted.n_outputs, key))
        self.out.misses += 1
        self.store.count(hit=False)
        start = time.perf_counter()
        try:
            gm = lifted.gm if compiler.lifts_weights else bake(lifted, args)
            artifact = compiler.compile(gm, list(args) + list(weights), options, self.directory is not None)
            if artifact is None or not callable(artifact):
                raise TypeError(f"the {slot.backend} compiler returned {type(artifact).__name__}, not a callable")
            runner = _Runner(artifact, weights, lifted.single, slot.name, "compiled")
            _check_outputs(artifact(*args, *weights), lifted)
            synchronize(self.device)
        except Exception as exc:
            elapsed = time.perf_counter() - start
            self.out.compile_s += elapsed
            error = _short(exc)
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
                self.out.warnings.append(f"{slot.name} was not written to the disk cache: {why}")
        self.progress.step(f"{slot.name}: compiled in {elapsed:.1f} s")
        return self._keep(slot, runner, _Record(slot.name, slot.backend, "compiled", elapsed, False, slot.ops,
                                                n_in, lifted.n_outputs, key))

    def _failed(self, slot: _Slot, args: tuple, key: str, error: str, elapsed: float,
                cached: bool, cause: BaseException | None = None) -> _Runner:
        when = " (an earlier compile of the same subgraph, remembered by the compile cache)" if cached else ""
        message = f"subgraph {slot.name} ({slot.backend}, {slot.ops} ops) failed to compile{when}: {error}"
        if self.on_error == "raise":
            raise MeasureError(message + "\nPass on_error='fallback' to run failing subgraphs in eager "
                               "PyTorch and measure the rest.") from cause
        self.out.fallbacks.append(slot.name)
        self.out.warnings.append(message + "; it ran in eager PyTorch instead")
        fresh = lift(fetch_attr(self.module, slot.name), self.device)  # the compiler may have changed the other
        return self._keep(slot, _Runner(fresh.gm, fresh.weights, fresh.single, slot.name, "fallback"),
                          _Record(slot.name, slot.backend, "fallback", elapsed, cached, slot.ops, len(args),
                                  fresh.n_outputs, key))

    def _keep(self, slot: _Slot, runner: _Runner, record: _Record) -> _Runner:
        self.out.runners[slot.name] = runner
        self.out.records[slot.name] = record
        return runner


def _check_outputs(out: Any, lifted: Lifted) -> None:
    n = len(out) if isinstance(out, (tuple, list)) else 1
    if n != lifted.n_outputs:
        raise RuntimeError(f"the compiled subgraph returned {n} value(s), the subgraph has {lifted.n_outputs}")


def _assemble(module: GraphModule, runners: Mapping[str, _Runner], device: torch.device) -> GraphModule:
    """A new top-level GraphModule: the split module's graph, calling the runners."""
    root = torch.nn.Module()
    for name, runner in runners.items():
        root.add_module(name, runner)
    graph = torch.fx.Graph()
    out = graph.graph_copy(module.graph, {})
    graph.output(out)
    for node in graph.nodes:
        if node.op == "get_attr" and not hasattr(root, str(node.target).split(".")[0]):
            attr = fetch_attr(module, node.target)
            value = on_device(attr, device) if isinstance(attr, torch.Tensor) else attr
            _set_path(root, str(node.target), value)
    return GraphModule(root, graph, class_name="MeasuredSplit")


# ----------------------------------------------------------------------------- checking
def compare(outputs: Any, reference: Any, rtol: float | None = None, atol: float | None = None
            ) -> tuple[bool, float, float, list[str]]:
    """(match, max_abs_error, max_rel_error, problems) of `outputs` against `reference`."""
    got, want = tree_leaves(outputs), tree_leaves(reference)
    problems: list[str] = []
    if len(got) != len(want):
        return False, math.inf, math.inf, [f"{len(got)} outputs, eager gives {len(want)}"]
    ok, max_abs, max_rel = True, 0.0, 0.0
    for i, (a, b) in enumerate(zip(got, want)):
        if not isinstance(b, torch.Tensor):
            if a != b:
                ok = False
                problems.append(f"output {i}: {a!r} != {b!r}")
            continue
        if not isinstance(a, torch.Tensor) or tuple(a.shape) != tuple(b.shape):
            ok, max_abs, max_rel = False, math.inf, math.inf
            problems.append(f"output {i}: shape {tuple(getattr(a, 'shape', ()))} != {tuple(b.shape)}")
            continue
        if b.numel() == 0:
            continue
        err, scale = _max_error(a.detach(), b.detach())
        rel = err / scale if scale > 0 else (0.0 if err == 0 else math.inf)
        max_abs, max_rel = max(max_abs, err), max(max_rel, rel)
        if b.is_floating_point() or b.is_complex():
            r, t = TOLERANCES.get(b.dtype, _DEFAULT_TOL)
            r = r if rtol is None else rtol
            t = t if atol is None else atol
            if not err <= t + r * scale:
                ok = False
                problems.append(f"output {i}: max abs error {err:.3g} > {t:.1g} + {r:.1g} x max|eager| {scale:.3g}")
        elif err != 0:
            ok = False
            problems.append(f"output {i} ({b.dtype}): values differ (max abs error {err:.3g})")
        if a.dtype != b.dtype:
            problems.append(f"output {i}: dtype {a.dtype}, eager gives {b.dtype}")
    return ok, max_abs, max_rel, problems


def _max_error(a: torch.Tensor, b: torch.Tensor) -> tuple[float, float]:
    """max |a - b| and max |b| over finite values, computed where the tensors live.
    NaNs in the same places, and equal infinities, count as equal."""
    if a.device != b.device:
        a = a.to(b.device)
    if b.is_complex():
        a, b = torch.view_as_real(a.to(b.dtype)), torch.view_as_real(b)
    if b.is_floating_point():
        work = torch.float64 if b.dtype == torch.float64 else torch.float32
    else:
        work = torch.float64
    a, b = a.to(work), b.to(work)
    diff = (a - b).abs()
    err = float(diff.max())
    finite_ref = bool(torch.isfinite(b).all())
    scale = float(b.abs().max()) if finite_ref else 0.0
    if not math.isfinite(err) or not finite_ref:  # rare: look at NaNs and infinities one by one
        same = (torch.isnan(a) & torch.isnan(b)) | (torch.isinf(a) & torch.isinf(b) & (a == b))
        diff = torch.where(same, torch.zeros_like(diff), diff)
        diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
        err = float(diff.max())
        finite = b[torch.isfinite(b)]
        scale = float(finite.abs().max()) if finite.numel() else 0.0
    return err, scale


# ----------------------------------------------------------------------------- measure
def measure(partition: Any, example_inputs: Any, *, device: Any = None, warmup: int = 10, iters: int = 100,
            check: bool = True, on_error: str = "raise", cache_dir: str | Path | None = None,
            trt_settings: Any = None, progress: Any = None, inductor_options: dict | None = None,
            compilers: Mapping[str, Any] | None = None, cache: cache_mod.CompileCache | None = None,
            baseline: bool = True, per_subgraph: bool = True, rtol: float | None = None,
            atol: float | None = None) -> Measurement:
    """Compile each subgraph of `partition` with its backend, time the split model and the
    eager model, check the outputs.

    - `device`: "cuda" when a GPU is there, else "cpu". TensorRT subgraphs need CUDA.
    - `warmup`, `iters`: untimed and timed calls, for the whole model and for each subgraph.
    - `check`: compare the split model's outputs with eager (dtype-aware tolerances, see
      TOLERANCES; `rtol` / `atol` override them). A mismatch is reported, not raised.
    - `on_error`: "raise" (MeasureError naming the subgraph and the backend's message) or
      "fallback" (run that subgraph eagerly; listed in `.fallbacks` and `.warnings`).
    - `cache_dir`: also keep compiled artifacts on disk there (TorchInductor artifacts need
      torch >= 2.8's standalone_compile; TensorRT modules are pickled).
    - `trt_settings`: a dict of Torch-TensorRT CompilationSettings fields, or a
      CompilationSettings; `inductor_options`: a dict for `torch._inductor.compile(options=)`.
    - `compilers`: {backend: fn(gm, example_inputs) -> callable} for backends of your own
      (or to replace a built-in one for this call).
    - `progress`: True for a progress bar, or a callable (stage, done, total).
    - `cache`: a CompileCache; the process-wide one by default.
    """
    if on_error not in ON_ERROR:
        raise MeasureError(f"on_error must be one of {ON_ERROR}, not {on_error!r}")
    if not isinstance(iters, int) or iters < 1:
        raise MeasureError(f"iters must be a positive integer, not {iters!r}")
    if not isinstance(warmup, int) or warmup < 0:
        raise MeasureError(f"warmup must be a non-negative integer, not {warmup!r}")
    if not all(hasattr(partition, a) for a in ("module", "subgraphs", "graph")):
        raise MeasureError(f"measure takes a hv.Partition (from hv.partition), not {type(partition).__name__}")
    dev = resolve_device(device)
    slots = _plan(partition, dev, compilers)
    inputs = tuple(x.to(dev) if isinstance(x, torch.Tensor) else x for x in tree_leaves(example_inputs))
    store = cache if cache is not None else cache_mod.default_cache()
    try:
        directory = Path(cache_dir).expanduser() if cache_dir is not None else None
    except TypeError:
        raise MeasureError(f"cache_dir must be a path, not {type(cache_dir).__name__}") from None
    options = {"tensorrt": trt_settings, "inductor": inductor_options}
    if trt_settings is not None and any(s.backend == "tensorrt" for s in slots):
        try:
            from hierviz import trt

            trt.compilation_settings(trt_settings)
        except (TypeError, ValueError) as exc:
            raise MeasureError(f"trt_settings: {exc}") from None

    bar = _Progress(progress, len(slots) + 1 + int(baseline) + (len(slots) if per_subgraph else 0))
    try:
        with torch.no_grad():
            built, _ = _Builder(partition, slots, dev, store, directory, options, on_error, bar).run(inputs)
            top = _assemble(partition.module, built.runners, dev)
            base = lift(partition.graph, dev) if (baseline or check) else None
            split_call = lambda: top(*inputs)  # noqa: E731
            base_call = (lambda: base.gm(*inputs, *base.weights)) if base is not None else None  # noqa: E731

            base_stats = reference = None
            if base_call is not None:
                try:
                    reference = base_call()
                except Exception as exc:
                    raise MeasureError(f"the unsplit graph (partition.graph) failed to run eagerly on "
                                       f"{dev}: {_short(exc)}") from exc
            if baseline and base_call is not None:
                base_stats = time_fn(base_call, dev, warmup=warmup, iters=iters)
                bar.step("eager baseline timed")
            stats = time_fn(split_call, dev, warmup=warmup, iters=iters)
            bar.step("split model timed")

            match = max_abs = max_rel = None
            problems: list[str] = []
            if check and base_call is not None:
                match, max_abs, max_rel, problems = compare(split_call(), reference, rtol, atol)

            if per_subgraph:
                captured = _capture_inputs(top, built.runners, inputs)
                for name, runner in built.runners.items():
                    args = captured.get(name)
                    if args is not None:
                        built.records[name].stats = time_fn(lambda r=runner, a=args: r(*a), dev,
                                                            warmup=warmup, iters=iters)
                    bar.step(f"{name} timed")
    finally:
        bar.close()

    notes = list(built.warnings)
    if stats.noisy:
        notes.append(f"split model timing is noisy: coefficient of variation {stats.cv:.1%} > {NOISY_CV:.0%}; "
                     "close other programs, fix GPU clocks, or raise iters")
    if base_stats is not None and base_stats.noisy:
        notes.append(f"eager baseline timing is noisy: coefficient of variation {base_stats.cv:.1%} > {NOISY_CV:.0%}")
    if match is False:
        notes.append("outputs differ from eager: " + "; ".join(problems[:3]))
    elif problems:
        notes.append("; ".join(problems[:3]))
    level = _user_stacklevel()
    for note in notes:
        warnings.warn(note, MeasureWarning, stacklevel=level)
    noisy_subs = [n for n, r in built.records.items() if r.stats is not None and r.stats.noisy]
    if noisy_subs:  # recorded, not warned: small subgraphs are often noisy and there can be hundreds
        notes.append(f"{len(noisy_subs)} of {len(built.records)} subgraph timings are noisy (cv > {NOISY_CV:.0%}): "
                     f"{_names(noisy_subs, 5)}")

    table = _per_subgraph_table(built.records)
    sub_total = float(table["median_ms"].sum()) if per_subgraph and len(table) else 0.0
    return Measurement(
        median_ms=stats.median_ms, p10_ms=stats.p10_ms, p90_ms=stats.p90_ms, std_ms=stats.std_ms,
        cv=stats.cv, iters=iters, warmup=warmup, device=str(dev), compile_s=built.compile_s,
        cache_hits=built.hits, cache_misses=built.misses,
        baseline_ms=base_stats.median_ms if base_stats else None,
        baseline_cv=base_stats.cv if base_stats else None,
        speedup=(base_stats.median_ms / stats.median_ms) if base_stats and stats.median_ms > 0 else None,
        max_abs_error=max_abs, max_rel_error=max_rel, outputs_match=match, per_subgraph=table,
        glue_ms=(stats.median_ms - sub_total) if per_subgraph else math.nan,
        fallbacks=tuple(built.fallbacks), warnings=notes, config=getattr(partition, "config", None),
        timing=stats, baseline_timing=base_stats,
    )


def _user_stacklevel() -> int:
    """The stacklevel of the first caller outside this package, for warnings."""
    here = str(Path(__file__).parent)
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(here):
        frame, level = frame.f_back, level + 1
    return level


def _capture_inputs(top: GraphModule, runners: Mapping[str, _Runner], inputs: Sequence[Any]) -> dict[str, tuple]:
    """The arguments each runner receives in one run of the split model."""
    captured: dict[str, tuple] = {}
    handles = []
    for name, runner in runners.items():
        def hook(module: torch.nn.Module, args: tuple, name: str = name) -> None:
            captured[name] = args
        handles.append(runner.register_forward_pre_hook(hook))
    try:
        top(*inputs)
    finally:
        for h in handles:
            h.remove()
    return captured


def _per_subgraph_table(records: Mapping[str, _Record]) -> Any:
    import pandas as pd

    rows = []
    medians = [r.stats.median_ms for r in records.values() if r.stats is not None]
    total = sum(medians)
    for r in records.values():
        s = r.stats
        rows.append({
            "tag": r.tag, "backend": r.backend,
            "median_ms": s.median_ms if s else math.nan,
            "share": (s.median_ms / total) if s and total > 0 else math.nan,
            "compile_s": r.compile_s, "cached": r.cached, "status": r.status,
            "p10_ms": s.p10_ms if s else math.nan, "p90_ms": s.p90_ms if s else math.nan,
            "cv": s.cv if s else math.nan, "ops": r.ops, "inputs": r.inputs, "outputs": r.outputs,
            "key": r.key[:16],
        })
    return pd.DataFrame(rows, columns=PER_SUBGRAPH_COLUMNS)


__all__ = ["measure", "compare", "resolve_device", "TOLERANCES"]
