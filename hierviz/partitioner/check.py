"""`hv.check`: a partition judged against limits, for CI.

The figures are those `Partition.stats` shows (subgraphs, subgraphs_by_backend, coverage,
boundary_tensors). Every broken limit is listed with its figure, and the top blockers say what
to change; `like=` compares with a saved partition (`hv.load_partition`, or its path). A
MultiGraphPartition (`ir="torch_compile"`) is judged on its totals over graphs (its `stats`), its
top blockers include graph breaks, and `like=` a saved one of those also fails more graph breaks.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from hierviz.errors import ConfigError, PartitionCheckError, checked_arguments
from hierviz.partitioner.blockers.blocker_causes import blockers_table
from hierviz.partitioner.blockers.blocker_text import saves_text
from hierviz.partitioner.by_graph.multi_graph import NOTHING_CAPTURED, MultiGraphPartition
from hierviz.partitioner.partition_result import Partition
from hierviz.partitioner.saved.load import load_partition

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.building.builds import Builds

TOP_BLOCKERS = 3


def _count(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"hv.check: {name} is a whole number >= 0 (e.g. {name}=10), not {value!r}.")
    return value


def _fraction(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(f"hv.check: {name} is a fraction between 0 and 1 (e.g. {name}=0.95 for 95%), not {value!r}.")
    return float(value)


def _by_backend(part: Partition | MultiGraphPartition, value: Any) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError("hv.check: max_subgraphs_by_backend maps a backend to its most subgraphs, e.g. "
                          f"{{'tensorrt': 4}}, not {value!r}.")
    out = {}
    for backend, limit in value.items():
        if backend not in part.backends:
            raise ConfigError(f"hv.check: max_subgraphs_by_backend names {backend!r}, which is not a backend of this "
                              f"partition ({', '.join(part.backends)}).")
        count = _count(f"max_subgraphs_by_backend[{backend!r}]", limit)
        if count is not None:  # None: no limit for that backend, as max_subgraphs=None
            out[backend] = count
    return out


def _like(value: Any) -> Partition | MultiGraphPartition | None:
    if value is None or isinstance(value, (Partition, MultiGraphPartition)):
        return value
    if isinstance(value, (str, Path)):
        return load_partition(value)
    raise ConfigError(f"hv.check: like= takes a saved partition (hv.load_partition(path), or the path of "
                      f"part.save('x.json')), not {type(value).__name__}.")


def violations(part: Partition | MultiGraphPartition, *, max_subgraphs: Any = None,
               max_subgraphs_by_backend: Any = None, min_coverage: Any = None, max_boundary_tensors: Any = None,
               like: Any = None, build: Any = False) -> tuple[list[str], list[str]]:
    """(broken limits, kept limits), each a line with its figure; arguments checked first.
    `build`: every TensorRT engine must build on this machine (part.build())."""
    if not isinstance(build, bool):
        raise ConfigError("hv.check: build= is True (every TensorRT engine must build here) or False, "
                          f"not {build!r:.40}.")
    if not isinstance(part, (Partition, MultiGraphPartition)):
        raise ConfigError(f"hv.check takes a hv.Partition or hv.MultiGraphPartition (hv.partition(...) or "
                          f"hv.load_partition(path)), not {type(part).__name__}.")
    limits = {"subgraphs": _count("max_subgraphs", max_subgraphs),
              "boundary_tensors": _count("max_boundary_tensors", max_boundary_tensors)}
    coverage = _fraction("min_coverage", min_coverage)
    by_backend = _by_backend(part, max_subgraphs_by_backend)
    saved = _like(like)
    s = part.stats
    broken: list[str] = []
    kept: list[str] = []

    def judge(ok: bool, line: str) -> None:
        (kept if ok else broken).append(line)

    for figure, limit in limits.items():
        if limit is not None:
            sign = "<=" if s[figure] <= limit else ">"
            judge(s[figure] <= limit, f"{figure} {s[figure]} {sign} max_{figure} {limit}")
    for backend, limit in by_backend.items():
        n = s["subgraphs_by_backend"].get(backend, 0)
        sign = "<=" if n <= limit else ">"
        judge(n <= limit, f"{backend} subgraphs {n} {sign} max_subgraphs_by_backend[{backend!r}] {limit}")
    if coverage is not None:
        judge(s["coverage"] >= coverage, f"coverage {s['coverage']:.2%} {'>=' if s['coverage'] >= coverage else '<'} "
                                         f"min_coverage {coverage:.2%}")
    if saved is not None:
        was = saved.stats
        where = f"like {getattr(saved, 'saved_from', None) or 'the saved partition'}"
        judge(s["subgraphs"] <= was["subgraphs"], f"{where}: subgraphs {s['subgraphs']} vs {was['subgraphs']} saved")
        judge(s["boundary_tensors"] <= was["boundary_tensors"],
              f"{where}: boundary tensors {s['boundary_tensors']} vs {was['boundary_tensors']} saved")
        judge(s["coverage"] >= was["coverage"], f"{where}: coverage {s['coverage']:.2%} vs {was['coverage']:.2%} saved")
        if "graph_breaks" in s and "graph_breaks" in was:
            judge(s["graph_breaks"] <= was["graph_breaks"],
                  f"{where}: graph breaks {s['graph_breaks']} vs {was['graph_breaks']} saved")
    if s.get("nothing_captured"):  # a model that runs entirely in Python passes no limit
        broken.append(f"{NOTHING_CAPTURED}: dynamo made no graph ({s['graph_breaks']} graph break(s)), "
                      "so accelerated 0%")
    if build:
        built_broken, built_kept = build_violations(part.build())
        broken += built_broken
        kept += built_kept
    return broken, kept


def build_violations(builds: Builds) -> tuple[list[str], list[str]]:
    """(broken, kept) lines of the build check: each engine that failed to build or graph that
    failed in PyTorch broken; all engines built kept."""
    broken: list[str] = []
    kept = [f"engines: {builds.headline()}"] if builds.ok else []
    for row in builds.failed:
        at = f" at node {row.node}" if row.node else ""
        broken.append(f"engine {row.name} failed at {row.stage}{at}: {row.error}; then {row.runs_instead}"
                      + (f"; fix: {row.fix}" if row.fix else ""))
    for graph, failure in builds.run_failures:
        broken.append(f"{graph or 'the graph'} fails in PyTorch at node {failure.node}: {failure.error}")
    return broken, kept


def top_blockers(part: Partition | MultiGraphPartition, rows: int = TOP_BLOCKERS) -> list[str]:
    """The first `rows` blockers as lines: what to change, what it gives and its verdict (with
    the graphs each concerns, across graphs; a graph break keeps no node out)."""
    if isinstance(part, MultiGraphPartition):
        table, multi = part.blockers(top=0), True
    else:
        table, multi = blockers_table(part, top=0), False
    return [(f"[{r.graph}] " if multi else "") + f"{r.kind}: {r.op}" + (f" ({r.nodes} node(s))" if r.nodes else "")
            + f"; {r.change}: {saves_text(r)}" + (f" [{r.verdict}]" if r.verdict else "")
            for r in table.head(rows).itertuples()]


def _what(part: Partition | MultiGraphPartition) -> str:
    """The partition in a few words: its settings and engine (and graphs, across graphs)."""
    graphs = (f", {len(part.graphs)} graphs, {len(part.breaks)} graph breaks"
              if isinstance(part, MultiGraphPartition) else "")
    return f"{part.config.label()}, {part.engine} engine{graphs}"


def failure_text(part: Partition | MultiGraphPartition, broken: list[str]) -> str:
    """The PartitionCheckError message: every broken limit, then the top blockers."""
    head = f"partition check failed ({_what(part)}): {len(broken)} limit(s) broken"
    lines = [head, *(f"  {b}" for b in broken)]
    blockers = top_blockers(part)
    if blockers:
        lines += ["top blockers (part.blockers() for all):", *(f"  {b}" for b in blockers)]
    return "\n".join(lines)


def passed_text(part: Partition | MultiGraphPartition, kept: list[str]) -> str:
    """One line: the check passed, with the figures judged."""
    what = "; ".join(kept) if kept else "no limits given"
    return f"partition check passed ({_what(part)}): {what}"


@checked_arguments
def check(part: Partition | MultiGraphPartition, *, max_subgraphs: int | None = None,
          max_subgraphs_by_backend: Mapping[str, int] | None = None, min_coverage: float | None = None,
          max_boundary_tensors: int | None = None, like: Any = None, build: bool = False) -> None:
    """Returns quietly when `part` keeps every limit; otherwise raises hv.PartitionCheckError
    (an AssertionError too, for pytest) listing every broken limit with its figure and the top
    blockers. Figures are those `part.stats` shows; `like=` a saved partition (or its path):
    more subgraphs or boundary tensors, or less coverage, than it had fails. A
    MultiGraphPartition is judged on its totals over graphs, graph breaks among its top
    blockers; `like=` a saved one also fails more graph breaks than it had. `build=True`: every
    TensorRT engine is converted and built here (part.build()), and one that fails breaks the
    check, named with its stage, error, what Torch-TensorRT then runs and the fix."""
    broken, _ = violations(part, max_subgraphs=max_subgraphs, max_subgraphs_by_backend=max_subgraphs_by_backend,
                           min_coverage=min_coverage, max_boundary_tensors=max_boundary_tensors, like=like,
                           build=build)
    if broken:
        raise PartitionCheckError(failure_text(part, broken))


__all__ = ["check", "violations", "build_violations", "failure_text", "passed_text", "top_blockers"]
