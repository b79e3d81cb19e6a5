"""The seam through which a Partition hands itself to the layers above the partitioner.

`Partition.render`, `.save`, `._repr_html_` (drawing), `.compile` and `.blockers(measure=True)` (latency) are
conveniences: their work lives in those layers, which the partitioner must not import (they
import it). The layer above registers, for each convenience, a function returning the callable
that does the work; the package facade (`hierviz/__init__.py`) registers them when hierviz is
imported, so they are in place whenever a Partition exists. The callables load their layer on
first use, so `import hierviz` stays cheap.
"""

from __future__ import annotations

from typing import Any, Callable

from hierviz.errors import HiervizError

# convenience -> a function returning the callable that does its work (loads the layer on first use)
CONVENIENCES = ("render", "save", "html", "compile", "measure_blockers")
_PROVIDERS: dict[str, Callable[[], Callable[..., Any]]] = {}


def provide(name: str, load: Callable[[], Callable[..., Any]]) -> None:
    """Register `load`, which returns the callable that `Partition.<name>` hands the partition to."""
    if name not in CONVENIENCES:
        raise ValueError(f"no Partition convenience called {name!r}; they are {', '.join(CONVENIENCES)}")
    _PROVIDERS[name] = load


def handler(name: str) -> Callable[..., Any]:
    """The callable doing `Partition.<name>`'s work; HiervizError when no layer registered it."""
    load = _PROVIDERS.get(name)
    if load is None:
        raise HiervizError(f"Partition.{name} needs hierviz's drawing and latency layers, which register "
                           "themselves when hierviz is imported: run `import hierviz` first.")
    return load()


__all__ = ["CONVENIENCES", "provide", "handler"]
