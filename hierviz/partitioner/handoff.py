"""The seam through which a Partition hands itself to the code above it.

`Partition.render`, `.save`, `._repr_html_` (drawing; `MultiGraphPartition`'s are `render_graphs`,
`save_graphs`, `html_graphs`), `.compile` and `.blockers(measure=True)` (latency) are
conveniences: their work lives in those layers, which the partitioner must not import (they
import it). Re-partitioning is above partition_result.py too: the engines' dispatcher
(`hierviz.partitioner.partition_graph`, which what-ifs, `recommend()` for engines other than
hierviz's, and blockers run) and `compile_today` (hierviz.partitioner.upstream.todays_compile) make Partitions,
so they import partition_result.py. Whoever is above registers, for each convenience, a function returning
the callable that does the work: the package facade (`hierviz/__init__.py`) the layers' ones,
the partitioner package (`hierviz/partitioner/__init__.py`) its own, when hierviz is imported,
so they are in place whenever a Partition exists. The callables load their module on first use,
so `import hierviz` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from hierviz.errors import HiervizError

# convenience -> the part of hierviz that does its work and registers it
CONVENIENCES = {"render": "drawing layer", "save": "drawing layer", "html": "drawing layer",
                "render_graphs": "drawing layer", "save_graphs": "drawing layer", "html_graphs": "drawing layer",
                "compile": "latency layer", "measure_blockers": "latency layer", "compile_graphs": "latency layer",
                "build": "building layer", "build_graphs": "building layer",
                "repartition": "partitioner package", "compile_today": "partitioner package",
                "report": "partitioner package", "ops_table": "partitioner package",
                "summary_table": "partitioner package", "blockers_table": "partitioner package",
                "with_build_failures": "partitioner package"}
# convenience -> a function returning the callable that does its work (loads its module on first use)
_PROVIDERS: dict[str, Callable[[], Callable[..., Any]]] = {}


def provide(name: str, load: Callable[[], Callable[..., Any]]) -> None:
    """Register `load`, which returns the callable that `Partition.<name>` hands the partition to."""
    if name not in CONVENIENCES:
        raise ValueError(f"no Partition convenience called {name!r}; they are {', '.join(CONVENIENCES)}")
    _PROVIDERS[name] = load


def loader(module: str, name: str) -> Callable[[], Callable[..., Any]]:
    """A function returning `module.name`, importing the module when first called."""
    return lambda: getattr(importlib.import_module(module), name)


def handler(name: str) -> Callable[..., Any]:
    """The callable doing `Partition.<name>`'s work; HiervizError when nothing registered it."""
    load = _PROVIDERS.get(name)
    if load is None:
        raise HiervizError(f"Partition.{name} needs hierviz's {CONVENIENCES[name]}, which registers itself "
                           "when hierviz is imported: run `import hierviz` first.")
    return load()


__all__ = ["CONVENIENCES", "provide", "loader", "handler"]
