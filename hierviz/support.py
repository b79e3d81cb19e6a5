"""Backend support sources: which nodes a backend can take, and why not.

`Support.check(node)` answers `(accepted, reason)`. Most sources decide per op target, which
the engine caches; `where(...)` and `tensorrt(validate=True)` look at each node.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any, Callable, Iterable

import torch

from hierviz import trt
from hierviz.opnames import normalize_all, qualname


class Support:
    """Which nodes a backend accepts. Hashable and comparable by what it describes."""

    per_node: bool = False  # True when check() depends on more than the node's target

    def __init__(self, key: tuple, description: str) -> None:
        self._key = key
        self.description = description

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Support) and self._key == other._key

    def __repr__(self) -> str:
        return f"Support({self.description})"

    def accepts_name(self, name: str) -> bool:
        """Whether an op with this qualified name is supported (target-level answer)."""
        raise NotImplementedError

    def check(self, node: torch.fx.Node) -> tuple[bool, str]:
        """(accepted, reason when not accepted) for one node."""
        name = qualname(node.target)
        if self.accepts_name(name):
            return True, ""
        return False, self.rejection(name)

    def rejection(self, name: str) -> str:
        return f"not in {self.description}"

    def to_dict(self) -> dict:
        raise NotImplementedError


class OpSetSupport(Support):
    def __init__(self, names: frozenset[str], key: tuple, description: str, kind: str,
                 reject: str = "") -> None:
        super().__init__(key, description)
        self.names = names
        self.packets = frozenset(n for n in names if n.count(".") == 3 and n.startswith("torch.ops."))
        self.kind = kind
        self._reject = reject

    def accepts_name(self, name: str) -> bool:
        if name in self.names:
            return True
        return bool(self.packets) and name.rsplit(".", 1)[0] in self.packets

    def rejection(self, name: str) -> str:
        return self._reject or f"not in {self.description}"

    def to_dict(self) -> dict:
        if self.kind == "ops":
            return {"kind": "ops", "ops": sorted(self.names)}
        return {"kind": self.kind}


class TensorRTSupport(OpSetSupport):
    """Torch-TensorRT's converter registry (live, or the shipped snapshot), loaded on first use."""

    def __init__(self, validate: bool) -> None:
        super().__init__(frozenset(), ("tensorrt", validate), "Torch-TensorRT converter registry",
                         "tensorrt", reject="no TensorRT converter")
        self._validate = validate
        # loaded on first use, so that every TensorRTSupport describes itself the same way
        del self.names, self.packets, self.description

    @property
    def per_node(self) -> bool:  # type: ignore[override]
        return self._validate and _tensorrt_names()[1] == "live"

    def __getattr__(self, attr: str) -> Any:
        if attr in ("names", "packets", "source", "version", "validate", "description"):
            names, source, version = _tensorrt_names()
            self.names, self.packets = names, frozenset()
            self.source, self.version = source, version
            self.validate = self._validate and source == "live"
            self.description = f"Torch-TensorRT {version} converter registry ({source})"
            return getattr(self, attr)
        raise AttributeError(attr)

    def check(self, node: torch.fx.Node) -> tuple[bool, str]:
        name = qualname(node.target)
        if not self.accepts_name(name):
            return False, "no TensorRT converter"
        if self.validate:
            registry = trt.converter_registry()
            try:
                with trt._answer_cuda_queries():
                    ok = node in registry
            except Exception as exc:  # noqa: BLE001 - a validator crashing counts as a rejection
                return False, f"converter exists, validator failed: {type(exc).__name__}: {exc}"
            if not ok:
                return False, "converter exists, validator rejected this node"
        return True, ""

    def to_dict(self) -> dict:
        return {"kind": "tensorrt", "validate": self._validate}


class PredicateSupport(Support):
    per_node = True

    def __init__(self, predicate: Callable[[torch.fx.Node], bool], name: str | None) -> None:
        label = name or getattr(predicate, "__name__", "predicate")
        super().__init__(("where", predicate), f"where({label})")
        self.predicate = predicate

    def accepts_name(self, name: str) -> bool:  # pragma: no cover - per-node only
        raise TypeError("where() support is decided per node")

    def check(self, node: torch.fx.Node) -> tuple[bool, str]:
        try:
            ok = bool(self.predicate(node))
        except Exception as exc:  # noqa: BLE001
            return False, f"{self.description} raised {type(exc).__name__}: {exc}"
        return ok, "" if ok else f"rejected by {self.description}"

    def to_dict(self) -> dict:
        return {"kind": "where", "name": self.description}


SNAPSHOT_FILE = "trt_converters.json"


@functools.lru_cache(maxsize=1)
def _tensorrt_names() -> tuple[frozenset[str], str, str]:
    if trt.available():
        names = frozenset(qualname(t) for t in trt.converter_targets())
        return names, "live", str(trt.info().version)
    data = json.loads(resources.files("hierviz.data").joinpath(SNAPSHOT_FILE).read_text())
    return frozenset(data["ops"]), "snapshot", data["torch_tensorrt_version"]


@functools.lru_cache(maxsize=1)
def _inductor_names() -> frozenset[str]:
    from torch._inductor import decomposition, lowering

    targets: set[Any] = set(lowering.lowerings)
    targets |= set(getattr(lowering, "fallbacks", set()))
    targets |= set(decomposition.select_decomp_table())
    names = {qualname(t) for t in targets if isinstance(t, torch._ops.OpOverload)}
    names.add("_operator.getitem")
    return frozenset(names)


def tensorrt(validate: bool = False) -> Support:
    """Torch-TensorRT's converters. `validate=True` also runs each converter's capability
    validator on the node, as Torch-TensorRT's own compile does."""
    return TensorRTSupport(validate)


def inductor() -> Support:
    """Every op TorchInductor can compile: its lowerings, decompositions and fallbacks."""
    return OpSetSupport(_inductor_names(), ("inductor",), "TorchInductor's lowerings",
                        "inductor", reject="no TorchInductor lowering")


def ops(names: Iterable[Any]) -> Support:
    """An explicit set of ops (qualified names or OpOverloads; a packet name takes all overloads)."""
    normalized = normalize_all(names, field="support.ops")
    return OpSetSupport(normalized, ("ops", normalized), f"ops({len(normalized)} ops)", "ops")


def where(predicate: Callable[[torch.fx.Node], bool], name: str | None = None) -> Support:
    """Support decided by a callable on each `torch.fx.Node`."""
    return PredicateSupport(predicate, name)


def none() -> Support:
    """No ops at all (the seed's default for inductor)."""
    return OpSetSupport(frozenset(), ("ops", frozenset()), "no ops (pass support={...} to enable)", "ops",
                        reject="backend has no support set (seed default: no ops)")


def from_dict(d: dict) -> Support:
    from hierviz.errors import ConfigError

    kind = d.get("kind")
    if kind == "tensorrt":
        return tensorrt(bool(d.get("validate", False)))
    if kind == "inductor":
        return inductor()
    if kind == "ops":
        return ops(d.get("ops", []))
    raise ConfigError(f"support of kind {kind!r} cannot be rebuilt from a dict; pass a hv.Support.")


def seed_default(backend: str) -> Support | None:
    """The seed's defaults: tensorrt = the converter registry, inductor = no ops."""
    if backend == "tensorrt":
        return tensorrt()
    if backend == "inductor":
        return none()
    return None
