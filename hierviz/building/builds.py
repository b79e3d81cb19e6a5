"""`hv.Builds`: every TensorRT engine of a partition converted and built on this machine.

Made by `Partition.build()` and `MultiGraphPartition.build()` (hierviz.building.build_partition);
this is what they found, as a table (`.df`) and in words (`repr`, `lines()`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hierviz.building.build_row import BuildRow
from hierviz.building.engine_fix import MAX_TESTS, change_text
from hierviz.building.frozen_random import FrozenRandom
from hierviz.building.graph_run import RunFailure
from hierviz.building.subgraph_builds import WARNED
from hierviz.errors import ConfigError
from hierviz.foundation.error_text import short_error

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from hierviz.building.fix_cost import FixCost
    from hierviz.building.repro import Repro
    from hierviz.building.subgraph_builds import SubgraphBuilder
    from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition
    from hierviz.partitioner.partition_result import Partition

STAGES = ("run", "convert", "build", "built")
REPRODUCED = ("run", "convert", "build")  # the stages a repro is made for ("run": Torch-TensorRT's lowering broke it)
COLUMNS = ("subgraph", "ops", "stage", "profile", "layers", "engine_bytes", "convert_s", "build_s", "node", "error",
           "details", "source", "runs_instead", "fix", "cached")


# the columns that are numbers (a missing one is <NA> or NaN); every other column holds str or None
_DTYPES = {"ops": "Int64", "layers": "Int64", "engine_bytes": "Int64", "convert_s": "float64", "build_s": "float64",
           "cached": bool}


def megabytes(n: int) -> str:
    """Bytes in decimal megabytes, as a build tool says them: '103 MB', '0.6 MB'."""
    mb = n / 1e6
    return f"{mb:.0f} MB" if mb >= 10 else f"{mb:.1f} MB"


@dataclass(frozen=True)
class Builds:
    """What converting and building every TensorRT subgraph gave.

    `rows`: one hv.BuildRow per TensorRT subgraph (`.df` is made from them; a `graph` column
    first across graphs); `builder`: the TensorRT that built them, in words, and `on_cpu` whether it built
    ahead of time with no GPU; `ir`; `fix`: the `torch_executed_ops` shown to make every engine
    build (the whole set to pass to hv.partition), or None; `fix_settings`: the `trt_settings` to
    build and measure with when the fix adds a conversion setting Torch-TensorRT's error named
    (`{'truncate_double': True}`; the whole dict, with the ones these builds had), else None;
    `fix_cost`: what the fix costs (ops moved out of TensorRT, accelerated ops and subgraphs
    before and after); `fix_tested`, `fix_builds`, `fix_cached`, `fix_reductions`: the candidates
    the fix search built, its builder's calls, its build-cache reads and its smallest-part
    searches; `frozen_random`: the random ops of the engines built, which Torch-TensorRT evaluates
    once at build (hierviz.building.frozen_random; `notes` says so), `fix_frozen_random` those of
    the fix's engines (its text says so); `run_failures`: graphs that failed
    when run in PyTorch at a node outside every TensorRT subgraph; `fixed_partition`: the
    partition with the fix applied, whose engines were built (`fixed()`); `partition` and
    `subgraph_builder`: what was built and with what (`repro()` builds parts of it the same way).
    Immutable: nothing changes a Builds after it is made."""

    rows: tuple[BuildRow, ...]
    builder: str
    on_cpu: bool
    ir: str = "dynamo"
    fix: frozenset[str] | None = None
    fix_text: str = ""
    run_failures: tuple[tuple[str, RunFailure], ...] = ()
    by_graph: bool = False
    notes: tuple[str, ...] = field(default=())
    fixed_partition: Partition | MultiGraphPartition | None = field(default=None, repr=False, compare=False)
    fix_builds: int = 0  # the builder's calls the fix search spent (cache hits not counted)
    fix_cached: int = 0  # the builds it read from the build cache
    fix_tested: int = 0  # the partitions it tested (built every engine of)
    partition: Partition | MultiGraphPartition | None = field(default=None, repr=False, compare=False)
    subgraph_builder: SubgraphBuilder | None = field(default=None, repr=False, compare=False)
    repros: tuple[tuple[str, Repro], ...] = field(default=(), compare=False)  # (row name, hv.Repro): with_repros()
    fix_settings: dict[str, Any] | None = None
    fix_cost: FixCost | None = None
    fix_reductions: int = 0  # the smallest-part searches the fix search ran
    frozen_random: tuple[FrozenRandom, ...] = ()
    fix_frozen_random: tuple[FrozenRandom, ...] = ()

    @property
    def df(self) -> "pd.DataFrame":
        """One row per TensorRT subgraph: subgraph, ops, stage (run, convert, build or built),
        profile (each input's optimization profile, `name: min → opt → max`; a static input its
        one shape), layers, engine_bytes, convert_s, build_s, node, error (the informative line,
        at most 200 characters), details (the whole text), source (the user's line that made a
        node failing in PyTorch), runs_instead, fix, cached (read from the build cache)."""
        import pandas as pd

        columns = (("graph",) if self.by_graph else ()) + COLUMNS
        df = pd.DataFrame({c: pd.Series([getattr(r, c) for r in self.rows], dtype=_DTYPES.get(c, object))
                           for c in columns}, columns=list(columns))
        return df

    @property
    def ok(self) -> bool:
        """Every engine built, and every graph ran in PyTorch."""
        return all(r.built for r in self.rows) and not self.run_failures

    @property
    def built(self) -> int:
        return sum(1 for r in self.rows if r.built)

    @property
    def engine_bytes(self) -> int:
        """The bytes of every built engine together."""
        return sum(r.engine_bytes or 0 for r in self.rows if r.built)

    @property
    def failed(self) -> list[BuildRow]:
        return [r for r in self.rows if not r.built]

    def __getstate__(self) -> dict:
        """Pickled (sent from the explorer's worker, a Ray task) without the partitions, whose
        graphs do not pickle, nor the builder: what crossed keeps its rows, fix and notes;
        fixed() and repro() then say how to go on from the partition in this process."""
        return {**self.__dict__, "fixed_partition": None, "partition": None, "subgraph_builder": None}

    def fix_change(self) -> str:
        """The fix as the user applies it: "torch_executed_ops=[...]", "trt_settings={...}" (a
        setting only), or both; "" without a fix."""
        if self.fix is None:
            return ""
        moves = self.fix_settings is None or self.fix_cost is None or bool(self.fix_cost.added)
        return change_text(self.fix if moves else None, self.fix_settings)

    def fixed(self) -> "Partition | MultiGraphPartition":
        """The partition with the fix applied (the settings it was built with, plus the fix's
        `torch_executed_ops`), whose every engine was built while looking for the fix; when the
        fix adds a setting (`fix_settings`), build and measure it with those trt_settings."""
        if self.fixed_partition is None and self.fix is not None:
            also = f" and build it with trt_settings={self.fix_settings!r}" if self.fix_settings else ""
            raise ConfigError(f"Builds.fixed(): these builds came from another process without their partition; "
                              f"apply the fix to yours: hv.partition(part, torch_executed_ops={sorted(self.fix)})"
                              f"{also}.")
        if self.fixed_partition is None:
            why = ("every engine built: there is nothing to fix" if self.ok and not self.fix_text
                   else self.fix_text or "no fix was searched: call build(fix=True)")
            raise ConfigError(f"Builds.fixed(): no fix to apply ({why}).")
        return self.fixed_partition

    def row(self, tag: str, graph: str | None = None) -> BuildRow | None:
        """The row of subgraph `tag` (of graph `graph`, across graphs), or None."""
        for r in self.rows:
            if r.subgraph == tag and (graph is None or r.graph == graph):
                return r
        return None

    def failed_row(self, subgraph: str | None = None) -> BuildRow:
        """The row of the failed subgraph a repro is made of: `subgraph` ('_run_on_acc_tensorrt_0', or
        'g1/_run_on_acc_tensorrt_0' across graphs), else the first that failed to convert or build
        (or whose lowered graph failed in PyTorch)."""
        failed = [r for r in self.rows if r.stage in REPRODUCED]
        named = [r.name for r in failed]
        if subgraph is None:
            if not failed:
                raise ConfigError("Builds.repro(): no engine failed to convert or build, and no lowered graph failed "
                                  f"in PyTorch, so there is nothing to reproduce ({self.headline()}).")
            return failed[0]
        for name, row in zip(named, failed):
            if subgraph in (name, row.subgraph):
                return row
        raise ConfigError(f"Builds.repro({subgraph!r}): that subgraph did not fail to convert or build, nor in "
                          f"PyTorch; the ones that did: {', '.join(named) or 'none'}.")

    def repro(self, subgraph: str | None = None) -> "Repro":
        """hv.Repro: the smallest part of the failed subgraph `subgraph` (default: the first
        failed at convert or build; 'g1/<tag>' across graphs) that fails the same way, found by
        building parts of it as this build did (kept in the build cache: a second call builds
        nothing)."""
        from hierviz.building.repro import repro_of

        if self.partition is None:
            raise ConfigError("Builds.repro(): these builds came from another process without their partition; "
                              "build it here (part.build()) and call repro() on that.")
        return repro_of(self.failed_row(subgraph), self.partition, self.subgraph_builder)

    def with_repros(self) -> "Builds":
        """These Builds with the smallest failing part of every engine that failed to convert or
        build (`repro()` of each; `repros`, shown in lines(), the report and the picture). A
        second call builds nothing: the parts are in the build cache."""
        failed = [r.name for r in self.rows if r.stage in ("convert", "build")]
        return dataclasses.replace(self, repros=tuple((name, self.repro(name)) for name in failed))

    def repro_for(self, tag: str, graph: str = "") -> Any:
        """The hv.Repro found for subgraph `tag` (of graph `graph`) by with_repros(), or None."""
        name = f"{graph}/{tag}" if graph else tag
        return next((r for n, r in self.repros if n == name), None)

    def of_graph(self, graph: str) -> "Builds":
        """The builds of one graph ('g2') of a MultiGraphPartition's, without the graph column."""
        if not self.by_graph:
            return self
        rows = tuple(dataclasses.replace(r, graph="") for r in self.rows if r.graph == graph)
        mine = tuple((n.split("/", 1)[1], r) for n, r in self.repros if n.startswith(f"{graph}/"))
        return dataclasses.replace(self, rows=rows, by_graph=False, repros=mine,
                                   run_failures=tuple(f for f in self.run_failures if f[0] == graph))

    def where(self) -> str:
        """Which builder built them, and how honest that is for a GPU deployment."""
        if self.on_cpu:
            return (f"{self.builder}, ahead of time on the CPU; a standard TensorRT build on a GPU may differ "
                    "(other tactics, other limits)")
        return f"{self.builder}, on this machine's GPU"

    def headline(self, short: bool = False) -> str:
        """'7/7 engines built, 103 MB', or which failed and why (`short`: each error in a few words,
        as a picture's title shows it)."""
        if not self.rows and not self.run_failures:
            return "no TensorRT subgraphs to build"
        text = f"{self.built}/{len(self.rows)} engines built"
        if self.built:
            text += f", {megabytes(self.engine_bytes)}"
        said = short_error if short else str
        failed = self.failed
        if failed:
            first = failed[0]
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            text += f"; {first.name} failed at {first.stage}: {said(str(first.error))}{more}"
        for graph, failure in self.run_failures:
            text += f"; {graph or 'the graph'} fails in PyTorch at {failure.node}: {said(str(failure.error))}"
        return text

    def lines(self) -> list[str]:
        """The builds in words: the headline, the builder, then one line per failure with what
        Torch-TensorRT then runs and the fix."""
        out = [self.headline(), f"Built with {self.where()}."]
        for r in self.rows:
            dynamic = "→" in r.profile
            if r.built:
                out.append(f"  {r.name}: built, {r.layers} layers, {megabytes(r.engine_bytes or 0)} "
                           f"(convert {r.convert_s or 0:.2f} s, build {r.build_s or 0:.2f} s"
                           + (", from the build cache)" if r.cached else ")"))
                if dynamic:
                    out.append(f"    profile: {r.profile}")
                continue
            at = f" at node {r.node}" if r.node else ""
            out.append(f"  {r.name}: failed at {r.stage}{at}: {r.error}")
            if dynamic:
                out.append(f"    profile: {r.profile}")
            if r.source:
                out.append(f"    from {r.source}")
            out.append(f"    then: {r.runs_instead}")
            if r.fix:
                out.append(f"    fix: {r.fix}")
            found = self.repro_for(r.subgraph, r.graph)
            if found is not None:
                out.append(f"    the smallest failing part: {found.headline()}")
        if self.fix_tested or self.fix_reductions:
            reduced = (f" and {self.fix_reductions} smallest failing part(s)" if self.fix_reductions else "")
            out.append(f"  The fix search built {self.fix_tested} candidate(s) (at most {MAX_TESTS} per graph)"
                       f"{reduced}: {self.fix_builds} builds"
                       + (f", {self.fix_cached} read from the build cache." if self.fix_cached else "."))
        for graph, failure in self.run_failures:
            out.append(f"  {graph or 'the graph'} fails in PyTorch at node {failure.node}: {failure.error}"
                       + (f" (from {failure.source})" if failure.source else ""))
        warned = [n for n in self.notes if n.startswith(WARNED)]
        out.extend(n for n in self.notes if not n.startswith(WARNED))
        if len(warned) == 1:
            out.append(warned[0])
        elif warned:  # each is in .notes (hierviz check --build --verbose prints them)
            first = warned[0][len(WARNED):]
            out.append(f"Torch-TensorRT warned {len(warned)} times while it converted (each in Builds.notes), "
                       f"first: {first if len(first) <= 120 else first[:117] + '...'}")
        return out

    def __repr__(self) -> str:
        return f"<hv.Builds: {self.headline()}>"

    def _repr_html_(self) -> str:
        import html

        head = html.escape(self.headline())
        return (f"<div><b>{head}</b><br><small>{html.escape(self.where())}</small>"
                f"{self.df.to_html(index=False)}</div>")


__all__ = ["Builds", "COLUMNS", "STAGES", "megabytes"]
