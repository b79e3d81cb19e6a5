"""The candidates a fix search tested (engine_fix): each set of ops and settings partitioned
once and built once, within a budget of candidates, each that builds kept, and the order
fixes are preferred in.

A candidate is (ops, settings): the ops it adds to `torch_executed_ops` (short names) and the
conversion settings it adds to the build's `trt_settings`. It works when its partition keeps a
TensorRT engine and every engine of it builds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from hierviz.building.fix_cost import tensorrt_ops
from hierviz.building.fix_trials import EngineFailure, FixTrials
from hierviz.building.reduction import Signature, signature
from hierviz.capturing.provenance import short_op as _short

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.partition_result import Partition
    from hierviz.settings.config import Config

TENSORRT = "tensorrt"
Settings = tuple[tuple[str, Any], ...]  # a candidate's settings, sorted by name: hashable


def short_op(name: str) -> str:
    """An op as a fix names it: an aten op short ('aten.split.Tensor', 'aten.relu'), any other
    op (a custom op's 'torch.ops.mylib.op.default') by its qualified name, which
    torch_executed_ops takes back as it is."""
    return _short(name) if name.startswith(("torch.ops.aten.", "aten.")) else name


def keeps_tensorrt(part: Partition) -> bool:
    """Whether the partition still has a TensorRT engine: a candidate without one is no fix."""
    return any(sg.backend == TENSORRT for sg in part.subgraphs)


def frozen(settings: Mapping[str, Any]) -> Settings:
    return tuple(sorted(settings.items()))


class FixSearch:
    """The candidates of one fix search over `part`: `partition(ops)` (made once),
    `failure(ops, settings)` (built once, `budget` candidates at most: `can_test()`), `working`
    (each candidate shown to build), `rank` (the preference: best first)."""

    def __init__(self, part: Partition, trials: FixTrials, repartition: Callable[[Any, Config], Partition],
                 budget: int) -> None:
        self.part, self.trials, self.repartition, self.budget = part, trials, repartition, budget
        self.moved = frozenset(short_op(str(o)) for o in part.config.torch_executed_ops)
        self._partitions: dict[frozenset[str], Partition] = {frozenset(): part}
        self._failures: dict[tuple[frozenset[str], Settings], EngineFailure | None] = {}
        self.working: list[tuple[frozenset[str], Settings]] = []
        self.tested = 0
        self.hints: dict[str, None] = {}  # the ops failures pointed at, in the order they did
        self.named: dict[str, Any] = {}  # the settings Torch-TensorRT's errors named

    def partition(self, ops: frozenset[str]) -> Partition:
        """`part` with `ops` moved to PyTorch too."""
        if ops not in self._partitions:
            config = self.part.config.replace(torch_executed_ops=set(self.moved | ops))
            self._partitions[ops] = self.repartition(self.part.graph, config)
        return self._partitions[ops]

    def can_test(self) -> bool:
        return self.tested < self.budget

    def known(self, ops: frozenset[str], settings: Mapping[str, Any]) -> bool:
        return (ops, frozen(settings)) in self._failures

    def failure(self, ops: frozenset[str], settings: Mapping[str, Any]) -> EngineFailure | None:
        """The first engine that fails with `ops` moved and `settings` added, or None (every
        engine builds); a candidate not built before counts against the budget (the partition
        as it was does not: its engines were built already)."""
        key = (ops, frozen(settings))
        if key not in self._failures:
            if ops or settings:
                self.tested += 1
            self._failures[key] = found = self.trials.first_failure(self.partition(ops), settings)
            if found is None and (ops or settings) and keeps_tensorrt(self.partition(ops)):
                self.working.append(key)
        return self._failures[key]

    def works(self, ops: frozenset[str], settings: Mapping[str, Any]) -> bool:
        """Whether the candidate keeps a TensorRT engine and every engine builds (not built
        when it keeps none)."""
        return keeps_tensorrt(self.partition(ops)) and self.failure(ops, settings) is None

    def signature(self, failure: EngineFailure, ops: frozenset[str]) -> Signature:
        """The failure as the smallest-part search compares failures (its node names masked)."""
        made = failure[1]
        return signature(made.stage, made.exception, made.error, [r.name for r in self.partition(ops).records],
                         made.error_cut)

    def rank(self, ops: frozenset[str], settings: Settings | Mapping[str, Any] = ()) -> tuple:
        """The preference between fixes, best first: the most accelerated ops kept, the most
        TensorRT ops kept, the fewest ops moved, the fewest settings added, the fewest subgraphs."""
        items = frozen(settings) if isinstance(settings, Mapping) else settings
        p = self.partition(ops)
        return (-p.stats["accelerated_ops"], -tensorrt_ops(p), len(ops), len(items), p.stats["subgraphs"],
                sorted(ops), [repr(i) for i in items])

    def op_of(self, ops: frozenset[str], failure: EngineFailure) -> str | None:
        """The op of the node Torch-TensorRT was converting when it failed (it names it
        'module.path/node'), when that node is a call of the failed subgraph; else None."""
        tag, made = failure
        if not made.node:
            return None
        p = self.partition(ops)
        name = made.node.rsplit("/", 1)[-1]
        if name not in p.subgraph(tag).nodes:
            return None
        record = p.record(name)
        if record.kind != "call_function":
            return None
        op = short_op(str(record.op))
        self.hints.setdefault(op, None)
        return op

    def ops_of(self, ops: frozenset[str], tag: str, names: tuple[str, ...]) -> frozenset[str]:
        """The ops of the call nodes `names` of subgraph `tag` (with `ops` moved), less those moved."""
        p = self.partition(ops)
        inside = set(p.subgraph(tag).nodes)
        found = [short_op(str(p.record(n).op)) for n in names if n in inside and p.record(n).kind == "call_function"]
        for op in found:
            self.hints.setdefault(op, None)
        return frozenset(found) - ops - self.moved


__all__ = ["FixSearch", "Settings", "frozen", "keeps_tensorrt", "short_op"]
