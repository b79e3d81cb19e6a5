"""Torch-TensorRT's own partitioners, run on a graph for comparison: the hierarchical one
(`engine="torch_tensorrt"`) and torch_tensorrt.compile's partitioning step (its fast adjacency
partitioner and the global one), with the converter registry's validators.

To show what upstream's small-block pass demoted, hierviz records the subgraphs it is given.
Upstream builds its partitioner object inside its own functions (`hierarchical_adjacency_partition`,
`fast_partition`, `global_partition`), so there is no instance to hand a subclass or a hook to:
the method is replaced on the class for the duration of one call (`patched`), under one lock so
that two threads never see each other's recorder, and restored in `finally`. Without this, the
only other way would be to re-implement those functions here, copying upstream's code.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from hierviz.errors import ConfigError
from hierviz.foundation.opnames import CALLABLE_OPS, in_op_set, packets_in, qualname
from hierviz.trt.loading import answer_cuda_queries, default_settings, require
from hierviz.trt.registry_lock import REGISTRY_LOCK, converter_registry, registry_held
from hierviz.trt.validation import Validator

class _Active(threading.local):
    depth = 0
    validator: Validator | None = None


_ACTIVE = _Active()  # this thread's validating() context, while it is open


def converter_targets() -> list[Any]:
    """Every target the converter registry has a converter for."""
    return list(converter_registry().keys())


@contextlib.contextmanager
def validating() -> Iterator[Validator]:
    """A `Validator` on the converter registry, ready to run capability validators on many
    nodes (`validator.accepts(node)` is `node in registry`, as torch_tensorrt.compile's
    partitioners ask, with what cannot change within the run kept): the registry's invariants
    are checked once (not on every lookup), its compilation settings are the defaults with no
    torch_executed_ops (a compile run earlier in this process may have left its own) and the
    CUDA queries are answered. Everything is restored after; re-entrant (the inner contexts
    share the outer one's Validator: enter it once around a run), and one thread at a time."""
    registry = converter_registry()
    with REGISTRY_LOCK:
        if _ACTIVE.validator is not None:  # set and cleared with depth
            _ACTIVE.depth += 1
            try:
                yield _ACTIVE.validator
            finally:
                _ACTIVE.depth -= 1
            return
        registry.validate_invariants()
        saved = registry.compilation_settings, registry.disallowed_targets
        with answer_cuda_queries():
            registry.compilation_settings = _validation_settings()
            registry.disallowed_targets = set()
            registry.validate_invariants = _no_check  # an instance attribute shadows the method
            _ACTIVE.depth, _ACTIVE.validator = 1, Validator(registry)
            try:
                yield _ACTIVE.validator
            finally:
                _ACTIVE.depth, _ACTIVE.validator = 0, None
                del registry.validate_invariants
                registry.compilation_settings, registry.disallowed_targets = saved


def current_validator() -> Validator | None:
    """The Validator of this thread's open `validating()` context, or None outside one."""
    return _ACTIVE.validator


def _no_check() -> None:
    return None


@functools.lru_cache(maxsize=1)
def _validation_settings() -> Any:
    return default_settings()


_PATCHING = threading.RLock()


@contextlib.contextmanager
def patched(replacements: dict[tuple[Any, str], Any]) -> Iterator[None]:
    """Replace methods on upstream classes, or functions of upstream modules ({(class or module,
    name): function}), for one call, one thread at a time (see the module docstring for why),
    and put the originals back after."""
    with _PATCHING:
        own = {key: key[0].__dict__.get(key[1]) for key in replacements}  # None: inherited
        try:
            for (cls, name), fn in replacements.items():
                setattr(cls, name, fn)
            yield
        finally:
            for (cls, name), fn in own.items():
                if fn is None:
                    delattr(cls, name)
                else:
                    setattr(cls, name, fn)


def run_upstream_partitioner(gm: torch.fx.GraphModule, before_demotion: list | None = None,
                             **kwargs: Any) -> tuple[Any, Any]:
    """Upstream's hierarchical_adjacency_partition (it mutates gm; pass a copy).

    `before_demotion`, a list, receives upstream's subgraphs before its small-block pass, as
    (is_acc, backend, [node names]). Upstream's internal errors (FxNetSplitterInternalError)
    become a ConfigError."""
    require()
    from torch_tensorrt.dynamo.partitioning import _hierarchical_partitioner as hp

    cls = hp.HierarchicalAdjacencyPartitioner
    original = cls.remove_small_acc_subgraphs

    sink: list = [] if before_demotion is None else before_demotion  # recording runs only with a list

    def recording(self: Any, subgraphs: list) -> list:
        sink.extend((s.is_acc, s.backend, [n.name for n in s.nodes]) for s in subgraphs)
        return original(self, subgraphs)

    replaced = {} if before_demotion is None else {(cls, "remove_small_acc_subgraphs"): recording}
    try:
        with registry_held(), patched(replaced):
            return hp.hierarchical_adjacency_partition(gm, **kwargs)
    except hp.FxNetSplitterInternalError as exc:
        raise ConfigError(f"upstream's partitioner failed internally (FxNetSplitterInternalError: {exc}); "
                          "engine='hierviz' partitions this graph.") from exc


@dataclass
class CompilePartition:
    """What torch_tensorrt.compile's partitioning step made of a graph (see
    run_compile_partitioner). `acc` and `torch` hold node names per block; `before_demotion`
    the fast partitioner's blocks before its small-block pass, as (is_acc, [names]);
    `supported` the names its operator support accepted; `fell_back` the fast partitioner's
    error when compile retried with the global one; `early_return` the supported-op count
    when compile skipped partitioning (fewer than min_block_size)."""

    partitioner: str  # "fast" or "global": the one whose result this is
    acc: list[list[str]]
    torch: list[list[str]]
    before_demotion: list[tuple[bool, list[str]]]
    supported: set[str]
    removed: set[str]  # removed by the fast partitioner's dead-code elimination
    fell_back: str | None = None
    early_return: int | None = None


def _deciding(registry: Any, extra: frozenset[str]) -> Any:
    """The registry's `node in registry`, answered once per node for one run (compile's
    partitioning asks three times per node, each time running the validator), and True for a
    node whose op is in `extra` (a what-if: that op given a converter)."""
    contains = type(registry).__contains__
    packets = packets_in(extra)
    memo: dict[Any, bool] = {}

    def decide(self: Any, key: Any) -> bool:
        if self is not registry or not isinstance(key, torch.fx.Node):
            return contains(self, key)
        known = memo.get(key)
        if known is None:
            known = memo[key] = (bool(extra) and key.op in CALLABLE_OPS
                                 and in_op_set(qualname(key.target), extra, packets)) or contains(self, key)
        return known

    return decide


def _unsplit(self: Any, remove_tag: bool = False) -> Any:
    """The fast partitioner's last step, building the split module, skipped: its blocks are
    recorded and tagged by then (tagging can still fail and send compile to the global
    partitioner), and hierviz builds its own split module from them. Saves most of the time."""
    del remove_tag  # upstream calls split(remove_tag=True); skipped, the tags stay for hierviz to read
    return self.module


def run_compile_partitioner(gm: torch.fx.GraphModule, *, fast: bool, min_block_size: int,
                            torch_executed_ops: set[str], require_full_compilation: bool,
                            extra_supported: frozenset[str] = frozenset()) -> CompilePartition:
    """The partitioning step of torch_tensorrt.compile (dynamo/_compiler.py, compile_module), run
    on `gm` (which it modifies: pass a copy) with the installed Torch-TensorRT's own
    partitioners and compile's rules: its CompilationSettings set on the converter registry;
    the whole graph left in PyTorch when it has no supported op or fewer than min_block_size
    (compile's early return outside dryrun); `fast_partition` with skip_fusion when every op is
    supported, retried with `global_partition` on FxNetSplitterInternalError; `global_partition`
    when not `fast`. Upstream's AssertionError for require_full_compilation is a ConfigError.
    `extra_supported`: op names the registry answers as converted (blockers' what-if: "if this
    op had a converter"); the registry's invariants are checked once for the run."""
    require()
    from torch.fx.passes.splitter_base import FxNetSplitterInternalError
    from torch_tensorrt.dynamo import partitioning
    from torch_tensorrt.dynamo.partitioning import _adjacency_partitioner as adjacency
    from torch_tensorrt.dynamo.partitioning import _global_partitioner as global_

    registry = converter_registry()
    settings = default_settings(min_block_size=min_block_size, torch_executed_ops=set(torch_executed_ops),
                                require_full_compilation=require_full_compilation, use_fast_partitioner=fast)
    names_before = {n.name for n in gm.graph.nodes}
    callable_before = {n.name for n in gm.graph.nodes if n.op in CALLABLE_OPS}
    fast_cls, global_cls = adjacency.TRTPartitioner, global_.TRTPartitioner
    small_pass, propose = fast_cls.remove_small_acc_subgraphs, global_cls.propose_partitions
    seen: dict[str, Any] = {}

    def recording_small(self: Any, subgraphs: list) -> list:
        seen["before"] = [(s.is_acc, [n.name for n in s.nodes]) for s in subgraphs]
        result = small_pass(self, subgraphs)
        seen["after"] = [(s.is_acc, [n.name for n in s.nodes]) for s in result]
        return result

    def recording_propose(self: Any) -> list:
        result = propose(self)
        seen["partitions"] = [[n.name for n in part.nodes] for part in result]
        return result

    REGISTRY_LOCK.acquire()  # the registry's state is set for this run: one thread at a time
    saved = registry.compilation_settings, registry.disallowed_targets
    recorders = {(fast_cls, "remove_small_acc_subgraphs"): recording_small,
                 (global_cls, "propose_partitions"): recording_propose,
                 (type(registry), "__contains__"): _deciding(registry, frozenset(extra_supported)),
                 (fast_cls, "split"): _unsplit}
    try:
        with patched(recorders), answer_cuda_queries():
            registry.set_compilation_settings(settings)
            registry.validate_invariants()
            registry.validate_invariants = _no_check  # checked once: ~0.6 ms a lookup otherwise
            num_supported, total = partitioning.get_graph_converter_support(gm, settings.torch_executed_ops)
            tester = (adjacency.OpSupportTester if fast else global_.TorchTensorRTOperatorSupport)(
                torch_executed_ops=settings.torch_executed_ops)
            modules = dict(gm.named_modules())
            supported = {n.name for n in gm.graph.nodes if n.op == "call_function"
                         and tester.is_node_supported(modules, n)}
            if num_supported == 0 or num_supported < min_block_size:
                return CompilePartition("fast" if fast else "global", [], [], [], supported, set(),
                                        early_return=num_supported)
            fell_back = None
            if fast:
                try:
                    partitioning.fast_partition(
                        gm, min_block_size=min_block_size, torch_executed_ops=settings.torch_executed_ops,
                        require_full_compilation=require_full_compilation, skip_fusion=(num_supported == total))
                except FxNetSplitterInternalError as exc:
                    fell_back = f"{type(exc).__name__}: {exc}"
                    seen.clear()
            if not fast or fell_back:
                partitioning.global_partition(
                    gm, min_block_size=min_block_size, torch_executed_ops=settings.torch_executed_ops,
                    require_full_compilation=require_full_compilation)
    except AssertionError as exc:
        raise ConfigError(f"torch_tensorrt.compile's partitioner: {exc}; set require_full_compilation=False "
                          "or give the ops it lists a converter") from exc
    finally:
        registry.__dict__.pop("validate_invariants", None)
        registry.compilation_settings, registry.disallowed_targets = saved
        REGISTRY_LOCK.release()
    if "after" in seen:
        acc = [names for is_acc, names in seen["after"] if is_acc]
        rest = [names for is_acc, names in seen["after"] if not is_acc]
        kept = {name for _, names in seen["before"] for name in names}
        return CompilePartition("fast", acc, rest, seen["before"], supported, callable_before - kept)
    acc = seen.get("partitions", [])
    in_acc = {name for names in acc for name in names}
    runs: list[list[str]] = [[]]  # the nodes left in the top graph, split at each TensorRT block
    for n in gm.graph.nodes:
        if n.name in names_before and n.name in callable_before and n.name not in in_acc:
            runs[-1].append(n.name)
        elif n.op == "call_module" and n.name not in names_before and runs[-1]:
            runs.append([])
    return CompilePartition("global", acc, [r for r in runs if r], [], supported, set(), fell_back=fell_back)


__all__ = ["converter_targets", "validating", "current_validator", "Validator",
           "patched", "run_upstream_partitioner", "CompilePartition", "run_compile_partitioner"]
