"""The public per-node record of a partition, and the vocabulary it is written in.

Everything downstream of partitioning (drawing, the HTML and text reports, the explorer,
`hv.diff`, the latency tables) reads a partition through `Partition.records` (a `NodeTable`,
columnar, built once per Partition), `Partition.record(name)` (one `NodeRecord`) and
`Partition.nodes()` (the same as a DataFrame), never through the engine's internals.

Also defined here: the tensor spec of a node and its text forms (`TensorSpec`). The words the
record is written in (reason codes, the fallback backend, tags) are defined in reasons.py.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import torch

from hierviz.partitioner.reasons import CALLABLE_OPS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


_DTYPE_ABBR = {
    "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int64": "i64",
    "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool",
    "complex64": "c64", "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
}


def short_dtype(dtype: str | None) -> str:
    """'torch.float32' -> 'float32'; None -> '?'."""
    return (dtype or "?").replace("torch.", "")


@functools.lru_cache(maxsize=None)
def dtype_itemsize(dtype: str | None) -> int | None:
    """Bytes per element of a recorded tensor dtype, from torch's own `torch.dtype.itemsize`
    ('torch.complex128' -> 16, 'torch.float8_e4m3fn' -> 1); None for anything that is not a
    torch dtype (unknown, or a non-tensor value's type name such as 'int')."""
    if not dtype or not dtype.startswith("torch."):
        return None
    found = getattr(torch, dtype[len("torch."):], None)
    return found.itemsize if isinstance(found, torch.dtype) else None


# ---------------------------------------------------------------------------- tensor specs
@dataclass(frozen=True)
class TensorSpec:
    """A node's value: producer name, shape and dtype (from meta['val'] or 'tensor_meta').

    `shape` is None for a value that is not a tensor; then `dtype` holds its Python type
    name ('tuple', 'int', ...) and `count` the length of a tuple/list. All None: unknown
    (a hand-built graph without metadata)."""

    name: str
    shape: tuple | None
    dtype: str | None
    count: int | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        if self.shape is None:
            return f"{self.name}: {self.dtype or '?'}"
        return f"{self.name}: {self.full()}"

    @property
    def known(self) -> bool:
        return self.shape is not None or self.dtype is not None

    def full(self) -> str:
        """'float32[1, 3, 224, 224]' (tooltips, tables); the type name for a non-tensor; '' if unknown."""
        if self.shape is None:
            return self.dtype or ""
        return f"{short_dtype(self.dtype)}[{', '.join(str(d) for d in self.shape)}]"

    def compact(self) -> str:
        """'f32[1,64,56,56]' (edge labels), 'tuple(3)', 'int'; '' if unknown."""
        if self.shape is None:
            if self.count is not None:
                return f"{self.dtype}({self.count})"
            return self.dtype or ""
        dt = short_dtype(self.dtype)
        return f"{_DTYPE_ABBR.get(dt, dt)}[{','.join(str(d) for d in self.shape)}]"

    def dryrun(self) -> str:
        """Torch-TensorRT's dryrun form: 'Tensor: (1, 3)@float32'; the type name otherwise."""
        if self.shape is None:
            return self.dtype or "value"
        return f"Tensor: ({', '.join(str(d) for d in self.shape)})@{short_dtype(self.dtype)}"


def _dim(d: Any) -> int | str:
    return int(d) if isinstance(d, int) or str(d).isdigit() else str(d)


def _shape(dims: Any) -> tuple:
    shape = tuple(dims)
    if all(type(d) is int for d in shape):  # the common case, without a call per dim
        return shape
    return tuple(_dim(d) for d in shape)


_DTYPE_NAMES: dict[Any, str] = {}


def _dtype(dtype: Any) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    return name


def value_facts(node: torch.fx.Node) -> tuple[tuple | None, str | None, int | None]:
    """(shape, dtype, count) of `node`'s value, from meta['val'] (or 'tensor_meta'), as
    TensorSpec holds them; (None, None, None) when neither is set."""
    meta = node.meta
    val = meta.get("val")
    if isinstance(val, torch.Tensor):
        return _shape(val.shape), _dtype(val.dtype), None
    if isinstance(val, (tuple, list)):
        return None, type(val).__name__, len(val)
    tm = meta.get("tensor_meta")
    if tm is not None and hasattr(tm, "shape"):
        return _shape(tm.shape), _dtype(tm.dtype), None
    if val is not None:
        return None, type(val).__name__, None
    return None, None, None


def tensor_spec(node: torch.fx.Node) -> TensorSpec:
    """The spec of `node`'s value, from meta['val'] (or 'tensor_meta'); unknown when neither is set."""
    return TensorSpec(node.name, *value_facts(node))


class SpecColumn(Sequence[TensorSpec]):
    """NodeTable.spec: node i's TensorSpec, built when asked for (from the dtype, shape and
    count columns), so a 10^5-node table does not hold 10^5 spec objects."""

    def __init__(self, table: "NodeTable") -> None:
        self._table = table

    def __len__(self) -> int:
        return len(self._table.name)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        t = self._table
        return TensorSpec(t.name[i], t.shape[i], t.dtype[i], t.count[i])


def module_of(node: torch.fx.Node) -> tuple[tuple[str, str], ...]:
    """The node's nn.Module stack from meta['nn_module_stack'], outermost first, as
    (path, qualified class name) pairs; () when the capture recorded none."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return ()
    out = []
    for value in stack.values():
        try:
            path, cls = value[0], value[1]
        except (TypeError, IndexError):
            continue
        if isinstance(cls, type):
            cls = f"{cls.__module__}.{cls.__qualname__}"
        out.append((str(path), str(cls)))
    return tuple(out)


# ---------------------------------------------------------------------------- the record
@dataclass(frozen=True)
class NodeRecord:
    """Everything hierviz knows about one graph node after partitioning.

    kind is the fx op ('placeholder', 'get_attr', 'call_function', ..., 'output'); op the
    qualified target ('torch.ops.aten.relu.default', '' for non-callables); backend the one it
    runs in ('torch' for PyTorch, 'graph' for inputs, weights and the output); eligible_backend
    the one support made it eligible for before small blocks were demoted (None for
    non-callables); tag its subgraph (None when not partitioned); reason_code one of
    REASON_CODES, reason the same in words; module_path the innermost nn.Module
    ('encoder.layer.0.attention', '' for the root or unknown) and module_class its class name."""

    index: int
    name: str
    op: str
    kind: str
    eligible_backend: str | None
    backend: str
    tag: str | None
    reason_code: str
    reason: str
    module_path: str
    module_class: str
    dtype: str | None
    shape: tuple | None
    inputs: tuple[str, ...]
    users: tuple[str, ...]

    @property
    def callable(self) -> bool:
        return self.kind in CALLABLE_OPS


@dataclass(frozen=True, eq=False)
class NodeTable:
    """The per-node record of a whole partition in columns (entry i of each column is node i
    in graph order), built once per Partition: the compact form that stays fast at 10^5 nodes.

    Per node: name, op, kind, eligible_backend, backend, subgraph (index into the subgraph
    columns, -1 when not partitioned), tag, reason_code, dtype, shape, count (items of a tuple
    value), spec (the three as a TensorSpec, built on access), module_stack,
    inputs and users (node indices), compute (False for getitem/view and non-callables),
    target (op for callables; the placeholder, attribute path or 'output' otherwise),
    forced_from (the source op, as hv.source_ops names it in torch_executed_ops, that forced
    the node into PyTorch; None for any other node).
    Per subgraph, in partition order: subgraph_tag, subgraph_backend, subgraph_is_acc,
    subgraph_members (node indices in graph order). Reason texts are built on demand
    (`reason(i)`), since formatting 10^5 of them costs a second."""

    name: tuple[str, ...]
    op: tuple[str, ...]
    kind: tuple[str, ...]
    eligible_backend: tuple[str | None, ...]
    backend: tuple[str, ...]
    subgraph: tuple[int, ...]
    reason_code: tuple[str, ...]
    dtype: tuple[str | None, ...]
    shape: tuple[tuple | None, ...]
    count: tuple[int | None, ...]
    module_stack: tuple[tuple[tuple[str, str], ...], ...]
    inputs: tuple[tuple[int, ...], ...]
    users: tuple[tuple[int, ...], ...]
    compute: tuple[bool, ...]
    subgraph_tag: tuple[str, ...]
    subgraph_backend: tuple[str, ...]
    subgraph_is_acc: tuple[bool, ...]
    subgraph_members: tuple[tuple[int, ...], ...]
    target: tuple[str, ...]  # op for callables; the placeholder / attribute / output target otherwise
    forced_from: tuple[str | None, ...]
    explain: Callable[[int, bool], str] = field(repr=False)  # (i, short) -> reason text

    def __len__(self) -> int:
        return len(self.name)

    @functools.cached_property
    def spec(self) -> SpecColumn:
        return SpecColumn(self)

    @functools.cached_property
    def position(self) -> Mapping[str, int]:
        """Node name -> index."""
        return {n: i for i, n in enumerate(self.name)}

    @functools.cached_property
    def tag(self) -> tuple[str | None, ...]:
        tags = self.subgraph_tag
        return tuple(None if k < 0 else tags[k] for k in self.subgraph)

    @functools.cached_property
    def module_path(self) -> tuple[str, ...]:
        return tuple(s[-1][0] if s else "" for s in self.module_stack)

    @functools.cached_property
    def module_class(self) -> tuple[str, ...]:
        return tuple(s[-1][1].rsplit(".", 1)[-1] if s else "" for s in self.module_stack)

    def reason(self, i: int) -> str:
        """Why node i runs where it runs, in words."""
        return self.explain(i, False)

    def short_reason(self, i: int) -> str:
        """The reason in a few words, for tables that group nodes ('supported by tensorrt')."""
        return self.explain(i, True)

    def is_callable(self, i: int) -> bool:
        return self.kind[i] in CALLABLE_OPS

    def __getitem__(self, i: int) -> NodeRecord:
        names = self.name
        k = self.subgraph[i]
        stack = self.module_stack[i]
        return NodeRecord(
            index=i, name=names[i], op=self.op[i], kind=self.kind[i],
            eligible_backend=self.eligible_backend[i], backend=self.backend[i],
            tag=None if k < 0 else self.subgraph_tag[k], reason_code=self.reason_code[i],
            reason=self.reason(i), module_path=stack[-1][0] if stack else "",
            module_class=stack[-1][1].rsplit(".", 1)[-1] if stack else "",
            dtype=self.dtype[i], shape=self.shape[i],
            inputs=tuple(names[a] for a in self.inputs[i]), users=tuple(names[u] for u in self.users[i]),
        )

    def __iter__(self) -> Iterator[NodeRecord]:
        return (self[i] for i in range(len(self)))

    def frame(self, rows: Sequence[int] | None = None) -> "pd.DataFrame":
        """The records as a DataFrame (one row per node, or per index in `rows`)."""
        import pandas as pd

        idx = range(len(self)) if rows is None else list(rows)
        tags, paths, classes = self.tag, self.module_path, self.module_class
        data = {
            "name": [self.name[i] for i in idx],
            "op": [self.op[i] for i in idx],
            "kind": [self.kind[i] for i in idx],
            "compute": [self.compute[i] for i in idx],
            "eligible_backend": [self.eligible_backend[i] for i in idx],
            "backend": [self.backend[i] for i in idx],
            "tag": [tags[i] for i in idx],
            "reason_code": [self.reason_code[i] for i in idx],
            "reason": [self.reason(i) for i in idx],
            "module_path": [paths[i] for i in idx],
            "module_class": [classes[i] for i in idx],
            "dtype": [self.dtype[i] for i in idx],
            "shape": [self.shape[i] for i in idx],
        }
        return pd.DataFrame(data, columns=list(NODE_COLUMNS))


NODE_COLUMNS = ("name", "op", "kind", "compute", "eligible_backend", "backend", "tag", "reason_code", "reason",
                "module_path", "module_class", "dtype", "shape")


__all__ = ["NodeRecord", "NodeTable", "NODE_COLUMNS", "TensorSpec", "tensor_spec", "value_facts", "SpecColumn",
           "module_of", "short_dtype", "dtype_itemsize"]
