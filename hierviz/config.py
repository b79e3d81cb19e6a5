"""hv.Config: the partitioner's settings, frozen and hashable."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from hierviz import support as support_mod
from hierviz.errors import ConfigError
from hierviz.opnames import normalize_all

MIN_BLOCK_SIZE = 5  # Torch-TensorRT's MIN_BLOCK_SIZE


class SupportMap(Mapping[str, support_mod.Support]):
    """A read-only, hashable mapping backend -> Support."""

    def __init__(self, items: Mapping[str, support_mod.Support]) -> None:
        self._items = dict(sorted(items.items()))

    def __getitem__(self, key: str) -> support_mod.Support:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return repr(self._items)


@dataclass(frozen=True)
class Config:
    """Settings of the hierarchical adjacency partitioner (defaults are the seed's)."""

    priority: tuple[str, ...] = ("tensorrt", "inductor")
    support: SupportMap | None = None
    min_block_size: int = MIN_BLOCK_SIZE
    torch_executed_ops: frozenset[str] = field(default_factory=frozenset)
    require_full_compilation: bool = False
    skip_fusion: bool = False

    def __post_init__(self) -> None:
        priority = self.priority
        if isinstance(priority, str):
            priority = tuple(p.strip() for p in priority.split(",") if p.strip())
        try:
            priority = tuple(str(p) for p in priority)
        except TypeError:
            raise ConfigError(f"priority must be a list of backend names, not {self.priority!r}") from None
        if not priority:
            raise ConfigError("priority is empty: give at least one backend, e.g. priority=('tensorrt',).")
        if len(set(priority)) != len(priority):
            raise ConfigError(f"priority lists a backend twice: {priority}. Name each backend once.")
        if any(p in ("None", "torch", "") for p in priority):
            raise ConfigError("'torch'/'None' is the fallback, not a backend: leave it out of priority.")
        object.__setattr__(self, "priority", priority)

        if self.support is not None:
            if not isinstance(self.support, Mapping):
                raise ConfigError("support must map backend name -> hv.support.*(...), e.g. "
                                  "support={'inductor': hv.support.inductor()}")
            for name, sup in self.support.items():
                if not isinstance(sup, support_mod.Support):
                    raise ConfigError(f"support[{name!r}] must be a hv.Support (hv.support.ops([...]), "
                                      f"hv.support.inductor(), ...), not {type(sup).__name__}.")
            if not isinstance(self.support, SupportMap):
                object.__setattr__(self, "support", SupportMap(self.support))
        for backend in priority:
            if backend not in (self.support or {}) and backend not in ("tensorrt", "inductor"):
                raise ConfigError(f"backend {backend!r} has no support set; pass "
                                  f"support={{{backend!r}: hv.support.ops([...])}} or hv.support.where(...).")

        mbs = self.min_block_size
        if isinstance(mbs, bool) or not isinstance(mbs, int):
            try:
                if float(mbs) != int(mbs):
                    raise ValueError
                mbs = int(mbs)
            except (TypeError, ValueError):
                raise ConfigError(f"min_block_size must be an integer >= 1, not {self.min_block_size!r}.") from None
        if mbs < 1:
            raise ConfigError(f"min_block_size must be >= 1 (got {mbs}); 1 keeps every accelerated subgraph.")
        object.__setattr__(self, "min_block_size", mbs)

        object.__setattr__(self, "torch_executed_ops", normalize_all(self.torch_executed_ops or ()))
        object.__setattr__(self, "require_full_compilation", bool(self.require_full_compilation))
        object.__setattr__(self, "skip_fusion", bool(self.skip_fusion))

    def support_for(self, backend: str) -> support_mod.Support | None:
        """The Support used for `backend`: the one given, else the seed's default."""
        if self.support is not None and backend in self.support:
            return self.support[backend]
        return support_mod.seed_default(backend)

    def replace(self, **changes: Any) -> "Config":
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ConfigError(f"unknown Config field(s) {sorted(unknown)}; fields are "
                              f"{[f.name for f in dataclasses.fields(self)]}.")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """JSON-safe: op names as strings, support as descriptions."""
        return {
            "priority": list(self.priority),
            "support": None if self.support is None else {k: v.to_dict() for k, v in self.support.items()},
            "min_block_size": self.min_block_size,
            "torch_executed_ops": sorted(self.torch_executed_ops),
            "require_full_compilation": self.require_full_compilation,
            "skip_fusion": self.skip_fusion,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Config":
        d = dict(d)
        unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ConfigError(f"unknown Config field(s) {sorted(unknown)}.")
        if d.get("support") is not None:
            d["support"] = {k: support_mod.from_dict(v) for k, v in d["support"].items()}
        if "priority" in d:
            d["priority"] = tuple(d["priority"])
        if "torch_executed_ops" in d:
            d["torch_executed_ops"] = frozenset(d["torch_executed_ops"])
        return cls(**d)

    def label(self) -> str:
        """A short one-line description, for tables and titles."""
        parts = [">".join(self.priority), f"mbs={self.min_block_size}"]
        if self.torch_executed_ops:
            parts.append("torch=" + ",".join(sorted(o.replace("torch.ops.aten.", "") for o in self.torch_executed_ops)))
        if self.require_full_compilation:
            parts.append("full")
        if self.skip_fusion:
            parts.append("nofusion")
        return " ".join(parts)
