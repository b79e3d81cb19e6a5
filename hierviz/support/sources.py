"""Backend support sources: which nodes a backend can take, and why not.

`Support.verdict(node)` answers a `Verdict(ok, code, why)`: accepted, or the code of the
refusal (`unsupported`, or `validator_rejected` when a converter exists but its capability
validator refuses the node) and its reason; `check(node)` is the same as `(ok, why)`. Sources
compose as torch.fx's OperatorSupportBase does: `chain(a, b)` takes a node when every source
does, `any_chain(a, b)` when one does. Most sources decide per op target, which the engine
caches; `where(...)` and `tensorrt()` (validated, the default) look at each node.

The sources themselves live by what they own: the verdict (hierviz.support.verdict), the
`Support` base (support_base), op sets (op_sets), Torch-TensorRT's converter registry and its
validation (tensorrt_support), TorchInductor (inductor_support), predicates and compositions
(composed). This module makes them (`tensorrt()`, `inductor()`, `ops()`, `where()`, `none()`),
rebuilds them from their `to_dict()` form and names, and still exposes their names.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import torch

from hierviz.errors import ConfigError
from hierviz.foundation.arguments import check_bool
from hierviz.foundation.opnames import normalize_all
from hierviz.support.composed import ComposedSupport, PredicateSupport, any_chain, chain
from hierviz.support.inductor_support import InductorSupport
from hierviz.support.op_sets import OpSetSupport
from hierviz.support.support_base import Support
from hierviz.support.tensorrt_support import SNAPSHOT_FILE, TensorRTSupport, record_verdicts, tensorrt_version
from hierviz.support.verdict import ACCEPTED, SUPPORTED, UNSUPPORTED, VALIDATOR, Verdict, refused


def tensorrt(validate: bool = True) -> Support:
    """Torch-TensorRT's converters, each converter's capability validator run on the node, as
    torch_tensorrt.compile does (squeezenet's max_pool2d(ceil_mode=True) has a converter that
    refuses it). `validate=False` checks op names only, as upstream's hierarchical partitioner
    does. Without torch_tensorrt installed: the shipped snapshot, op names only."""
    check_bool(validate, "hv.support.tensorrt(validate=...)")
    return TensorRTSupport(validate)


def inductor(fallbacks: bool = True) -> Support:
    """Every op TorchInductor compiles: its lowerings and decompositions ("lowered") and every
    other OpOverload it runs as an implicit fallback kernel ("fallback kernel"), except what
    `torch._inductor.compile` refuses on a captured subgraph: ops with data-dependent output
    shapes or values, and non-aten ops whose output aliases an input (prims.broadcast_in_dim). `fallbacks=False` keeps
    only the ops it lowers itself."""
    check_bool(fallbacks, "hv.support.inductor(fallbacks=...)")
    return InductorSupport(fallbacks)


def ops(names: Iterable[Any]) -> Support:
    """An explicit set of ops (qualified names or OpOverloads; a packet name takes all overloads)."""
    normalized = normalize_all(names, field="support.ops")
    return OpSetSupport(normalized, ("ops", normalized), f"ops({len(normalized)} ops)", "ops")


def where(predicate: Callable[[torch.fx.Node], bool], name: str | None = None) -> Support:
    """Support decided by a callable on each `torch.fx.Node`. An exception in the predicate
    counts as "not supported" and warns once, naming the node."""
    if not callable(predicate):
        raise ConfigError(f"hv.support.where() needs a callable taking a torch.fx.Node and returning "
                          f"True/False, not {type(predicate).__name__} {predicate!r}; e.g. "
                          "hv.support.where(lambda node: node.target in my_ops).")
    return PredicateSupport(predicate, name)


def none() -> Support:
    """No ops at all (Torch-TensorRT's default for inductor)."""
    return OpSetSupport(frozenset(), ("ops", frozenset()), "no ops (pass support={...} to enable)", "ops",
                        reject="backend has no support set (Torch-TensorRT's default: no ops)")


def from_dict(d: dict) -> Support:
    kind = d.get("kind")
    if kind == "tensorrt":
        return tensorrt(bool(d.get("validate", True)))
    if kind == "inductor":
        return inductor(bool(d.get("fallbacks", True)))
    if kind == "ops":
        return ops(d.get("ops", []))
    if kind in ("chain", "any_chain") and isinstance(d.get("of"), (list, tuple)):
        return ComposedSupport(kind, tuple(from_dict(p) if isinstance(p, dict) else p for p in d["of"]))
    raise ConfigError(f"support of kind {kind!r} cannot be rebuilt from a dict; pass a hv.Support.")


def upstream_default(backend: str) -> Support | None:
    """The defaults: tensorrt = the converter registry with its validators (what
    torch_tensorrt.compile converts), inductor = no ops (Torch-TensorRT's)."""
    if backend == "tensorrt":
        return tensorrt()
    if backend == "inductor":
        return none()
    return None


# The named support sources (the explorer's support picker, the CLI's --inductor-support, the
# tables' support column): name -> (what it is, the source). "default" (Config's None) is not
# one of them: it means Torch-TensorRT's default for each backend (upstream_default).
SOURCES: dict[str, tuple[str, Callable[[], Support]]] = {
    "tensorrt": ("Torch-TensorRT converters + validators", lambda: tensorrt()),
    "tensorrt-names": ("converter names only", lambda: tensorrt(validate=False)),
    "inductor": ("TorchInductor lowerings", lambda: inductor()),
    "none": ("no ops", lambda: none()),
}
# Other names the command line takes for a source: `--inductor-support all`.
SOURCE_ALIASES = {"all": "inductor"}


def source_name(sup: Any) -> str:
    """A short name for a Support: its SOURCES name (tensorrt, tensorrt-names, inductor, none),
    ops(N) for an explicit op set, else its description."""
    if isinstance(sup, TensorRTSupport):
        return "tensorrt" if sup.to_dict().get("validate", True) else "tensorrt-names"
    if isinstance(sup, OpSetSupport):
        if sup.kind == "inductor":
            return "inductor"
        if not sup.names:
            return "none"
        return f"ops({len(sup.names)})"
    return getattr(sup, "description", type(sup).__name__)


def from_source(name: str) -> Support:
    """The Support a SOURCES name (or alias) stands for; ConfigError naming them otherwise."""
    key = SOURCE_ALIASES.get(name, name)
    if key not in SOURCES:
        raise ConfigError(f"unknown support source {name!r}; use one of {', '.join([*SOURCES, *SOURCE_ALIASES])}.")
    return SOURCES[key][1]()


def added_ops(sup: Any) -> frozenset[str] | None:
    """The ops `sup` adds to Torch-TensorRT's validated converters: empty for tensorrt() itself,
    the op names of any_chain(tensorrt(), ops([...])) (nested any_chains too); None for any
    other support, which compile's partitioners cannot apply."""
    if sup == tensorrt(validate=True):
        return frozenset()
    if not isinstance(sup, ComposedSupport) or sup.kind != "any_chain":
        return None
    names: set[str] = set()
    registry = False
    for part in sup.parts:
        if isinstance(part, OpSetSupport) and part.kind == "ops":
            names |= part.names
            continue
        inner = added_ops(part)
        if inner is None:
            return None
        names |= inner
        registry = True
    return frozenset(names) if registry else None


__all__ = [
    # made and named here
    "tensorrt", "inductor", "ops", "where", "none", "from_dict", "upstream_default", "SOURCES", "SOURCE_ALIASES",
    "source_name", "from_source", "added_ops",
    # defined in the modules named above, still exposed here (hv.support is this module)
    "SUPPORTED", "UNSUPPORTED", "VALIDATOR", "Verdict", "ACCEPTED", "refused", "Support", "OpSetSupport",
    "SNAPSHOT_FILE", "TensorRTSupport", "record_verdicts", "tensorrt_version", "InductorSupport",
    "PredicateSupport", "ComposedSupport", "chain", "any_chain",
]
