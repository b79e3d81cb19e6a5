"""The seam through which a Partition hands itself to the code above it: one typed slot per convenience.

`Partition.render`, `.save`, `._repr_html_` (drawing; `MultiGraphPartition`'s are `render_graphs`,
`save_graphs`, `html_graphs`), `.compile`, `.build` and `.blockers(measure=True)` (latency) are
conveniences: their work lives in those layers, which the partitioner must not import (they
import it). Re-partitioning is above partition_result.py too: the engines' dispatcher
(`hierviz.partitioner.partition_graph`, which what-ifs, `recommend()` for engines other than
hierviz's, and blockers run) and `compile_today` (hierviz.partitioner.upstream.todays_compile) make Partitions,
so they import partition_result.py; so do the report and blockers tables. Whoever is above installs, on `seam`,
the callable doing each convenience's work: the package facade (`hierviz/__init__.py`) the layers' ones (wrapped in
`lazily`, so `import hierviz` stays cheap), the partitioner package (`hierviz/partitioner/__init__.py`) its own,
when hierviz is imported, so they are in place whenever a Partition exists. Each slot is typed with the
signature its callers use (the Protocols below), so mypy checks both the installed callable and every call.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Protocol, TypeVar, cast

from hierviz.errors import HiervizError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from torch.fx import GraphModule

    from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition
    from hierviz.partitioner.partition_result import Partition
    from hierviz.partitioner.upstream.todays_compile import TodaysCompile
    from hierviz.settings.config import Config

F = TypeVar("F", bound=Callable[..., Any])


# ---------------------------------------------------------------------------- the signatures callers use
# The first arguments are positional-only, so an implementation may name them as it likes (p, mp, partition),
# except beside **kwargs, where the names must be the implementation's (a keyword could otherwise repeat them).
# What a layer above returns (a drawing, a compiled model, hv.Builds) is Any here: the partitioner does not
# know those types.
class Render(Protocol):
    def __call__(self, p: Partition, /, view: str = ..., *, focus: Any = ..., max_nodes: int | None = ...,
                 measurement: Any = ..., against: Any = ..., depth: int | None = ..., radius: int = ...) -> Any: ...


class Save(Protocol):
    def __call__(self, p: Partition, path: str | Path, **kwargs: Any) -> Path: ...


class RenderGraphs(Protocol):
    def __call__(self, mp: MultiGraphPartition, /, view: str = ..., *, max_nodes: int | None = ...,
                 measurement: Any = ..., against: Any = ..., depth: int | None = ...) -> Any: ...


class SaveGraphs(Protocol):
    def __call__(self, mp: MultiGraphPartition, path: str | Path, **kwargs: Any) -> Path: ...


class Compile(Protocol):
    def __call__(self, partition: Partition, device: Any = ..., *, example_inputs: Any = ...,
                 **options: Any) -> Any: ...


class CompileGraphs(Protocol):
    def __call__(self, multi: MultiGraphPartition, device: Any = ..., *, example_inputs: Any = ...,
                 model: Any = ..., **options: Any) -> Any: ...


class Build(Protocol):
    def __call__(self, p: Partition, /, *, trt_settings: Any = ..., tf32: bool = ..., fix: bool = ...,
                 cache: bool = ..., example_inputs: Any = ...) -> Any: ...


class BuildGraphs(Protocol):
    def __call__(self, mp: MultiGraphPartition, /, *, trt_settings: Any = ..., tf32: bool = ..., fix: bool = ...,
                 cache: bool = ...) -> Any: ...


class MeasureBlockers(Protocol):
    def __call__(self, p: Partition, table: pd.DataFrame, *, device: Any = ..., example_inputs: Any = ...,
                 **options: Any) -> pd.DataFrame: ...


class Report(Protocol):
    def __call__(self, p: Partition, what_to_change: bool = ..., /, *, measurement: Any = ...,
                 builds: Any = ...) -> str: ...


class BlockersTable(Protocol):
    def __call__(self, p: Partition, /, *, kind: Any = ..., top: int = ...) -> pd.DataFrame: ...


# ---------------------------------------------------------------------------- the seam
class Slot(Generic[F]):
    """One convenience's place on the seam: the callable installed there; reading it before anything
    installed it raises HiervizError naming the part of hierviz that installs it."""

    def __init__(self, installer: str) -> None:
        self.installer = installer
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, seam: object, owner: type | None = None) -> F:
        work = vars(seam).get(self.name) if seam is not None else None
        if work is None:
            raise HiervizError(f"Partition.{self.name} needs hierviz's {self.installer}, which registers itself "
                               "when hierviz is imported: run `import hierviz` first.")
        return cast(F, work)

    def __set__(self, seam: object, work: F) -> None:
        vars(seam)[self.name] = work


class Seam:
    """The callables doing the Partition's conveniences, one typed slot each (installed from above)."""

    render = Slot[Render]("drawing layer")
    save = Slot[Save]("drawing layer")
    html = Slot[Callable[["Partition"], str]]("drawing layer")
    render_graphs = Slot[RenderGraphs]("drawing layer")
    save_graphs = Slot[SaveGraphs]("drawing layer")
    html_graphs = Slot[Callable[["MultiGraphPartition"], str]]("drawing layer")
    compile = Slot[Compile]("latency layer")
    measure_blockers = Slot[MeasureBlockers]("latency layer")
    compile_graphs = Slot[CompileGraphs]("latency layer")
    build = Slot[Build]("building layer")
    build_graphs = Slot[BuildGraphs]("building layer")
    repartition = Slot[Callable[["GraphModule", "Config"], "Partition"]]("partitioner package")
    compile_today = Slot[Callable[["Partition"], "TodaysCompile"]]("partitioner package")
    report = Slot[Report]("partitioner package")
    ops_table = Slot[Callable[["Partition"], "pd.DataFrame"]]("partitioner package")
    summary_table = Slot[Callable[["Partition"], "pd.DataFrame"]]("partitioner package")
    blockers_table = Slot[BlockersTable]("partitioner package")
    with_build_failures = Slot[Callable[["pd.DataFrame", "Partition", Any], "pd.DataFrame"]]("partitioner package")

    def __setattr__(self, name: str, work: Any) -> None:
        if name not in CONVENIENCES:
            raise AttributeError(f"the seam has no slot {name!r}; its slots are {', '.join(CONVENIENCES)}")
        super().__setattr__(name, work)

    def installed(self) -> list[str]:
        """The conveniences installed so far, in slot order."""
        return [name for name in CONVENIENCES if name in vars(self)]


# convenience -> the part of hierviz that installs it
CONVENIENCES = {name: slot.installer for name, slot in vars(Seam).items() if isinstance(slot, Slot)}
seam = Seam()


class _Lazy:
    """A callable loaded on first use: `load()` imports its module when the callable is first called, or
    when its signature is read (`inspect.signature` follows `__wrapped__`)."""

    def __init__(self, load: Callable[[], Callable[..., Any]]) -> None:
        self._load = load
        self._work: Callable[..., Any] | None = None

    @property
    def __wrapped__(self) -> Callable[..., Any]:
        if self._work is None:
            self._work = self._load()
        return self._work

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)


def lazily(load: Callable[[], F]) -> F:
    """The callable `load()` returns, with its type, loaded (its module imported) on first use."""
    return cast(F, _Lazy(load))


__all__ = ["CONVENIENCES", "Seam", "Slot", "seam", "lazily", "Render", "Save", "RenderGraphs",
           "SaveGraphs", "Compile", "CompileGraphs", "Build", "BuildGraphs", "MeasureBlockers", "Report",
           "BlockersTable"]
