"""One table row per configuration, shared by `hv.sweep`, `hv.tune`, `hv.compare_engines` and
`Explorer.history`.

Columns: the settings (the rows of hierviz.settings.config.SETTINGS, in table order, each cell its
row's `show` form: priority as 'a>b', op sets as sorted comma-joined strings, support as
'backend=source'; a `head` setting, the engine, goes first and only where asked), then
partition stats (summed over graphs for a graph-by-graph partition, ir="torch_compile", which
adds `graphs`, `graph_breaks` and `graphs_left_whole`), then latency when measured, then `error`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from hierviz.settings import config as settings
from hierviz.settings.config import Config
from hierviz.partitioner import FALLBACK, MultiGraphPartition

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.partition_result import Partition

STAT_COLUMNS_HEAD = ("subgraphs", "acc_subgraphs")
# `nothing_accelerated`: no subgraph is accelerated (measured: none ran accelerated, every one that
# was asked for fell back), so the row is the eager model in pieces, whatever its speed-up says.
# The min_block_size to try is `part.recommend()`'s, computed when asked (a re-partition per size).
STAT_COLUMNS_TAIL = ("coverage", "accelerated_coverage", "boundary_tensors", "nothing_accelerated")
GRAPH_COLUMNS = ("graphs", "graph_breaks", "graphs_left_whole")  # a graph-by-graph partition's (ir="torch_compile")
LATENCY_COLUMNS = ("median_ms", "p10_ms", "p90_ms", "cv", "speedup", "speedup_ci", "verdict", "max_abs_error",
                   "outputs_match", "mismatch_at", "accelerated", "fallbacks", "compile_s", "cache_hits",
                   "cache_misses")


def setting_columns() -> tuple[str, ...]:
    """The settings' columns, head settings (the engine) first."""
    rows = sorted(settings.SETTINGS, key=lambda row: not row.head)
    return tuple(row.name for row in rows)


def body_columns() -> tuple[str, ...]:
    """The settings' columns every table has (all but the head settings)."""
    return tuple(row.name for row in settings.SETTINGS if not row.head)


def head_columns(varied: Iterable[str] = (), base: Config | None = None) -> tuple[str, ...]:
    """The head settings' columns a table shows: those `varied` (a grid's keys), or not the
    default in `base`."""
    varied = set(varied)
    return tuple(row.name for row in settings.SETTINGS if row.head and (
        row.name in varied or (base is not None and getattr(base, row.name) != row.default)))


def format_field(name: str, value: Any) -> Any:
    """A setting's value as it appears in a table cell, for a raw grid value too (its row's
    `cell`: as the settings parser reads it, else as given)."""
    return settings.setting(name).cell(value)


def config_columns(config: Config) -> dict[str, Any]:
    """The cells of a Config (valid already: each value shown, not read again)."""
    return {row.name: row.show(getattr(config, row.name)) for row in settings.SETTINGS}


def stat_columns(part: Partition | MultiGraphPartition) -> dict[str, Any]:
    s = part.stats
    row: dict[str, Any] = {"subgraphs": s["subgraphs"], "acc_subgraphs": s["acc_subgraphs"]}
    for backend, n in s["subgraphs_by_backend"].items():
        row[f"subgraphs_{backend}"] = n
    row["coverage"] = s["coverage"]
    row["accelerated_coverage"] = s["accelerated_coverage"]
    row["boundary_tensors"] = s["boundary_tensors"]
    row["nothing_accelerated"] = s["acc_subgraphs"] == 0
    if isinstance(part, MultiGraphPartition):  # the figures above are summed over its graphs
        row.update({name: s[name] for name in GRAPH_COLUMNS})
    return row


def latency_columns(measurement: Any) -> dict[str, Any]:
    row = {}
    for name in LATENCY_COLUMNS:
        value = getattr(measurement, name, None)
        if name == "fallbacks":  # subgraphs whose backend failed and ran eagerly: never counted as that backend
            value = len(value) if value is not None else None
        if name == "cv" and value is None:
            median, std = getattr(measurement, "median_ms", None), getattr(measurement, "std_ms", None)
            if median and std is not None:
                value = std / median
        row[name] = value
    nothing = getattr(measurement, "nothing_accelerated", None)
    if nothing is not None:  # what ran: every accelerated subgraph may have fallen back
        row["nothing_accelerated"] = bool(nothing)
    return row


def backend_order(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """subgraphs_<backend> columns in order of first appearance, the PyTorch fallback last."""
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            if key.startswith("subgraphs_"):
                seen[key] = None
    cols = [c for c in seen if c != f"subgraphs_{FALLBACK}"]
    return cols + [f"subgraphs_{FALLBACK}"]


def column_order(rows: Sequence[Mapping[str, Any]], *, latency: bool, extra_head: Iterable[str] = (),
                 extra_tail: Iterable[str] = ()) -> list[str]:
    cols = [*extra_head, *body_columns(), *STAT_COLUMNS_HEAD, *backend_order(rows), *STAT_COLUMNS_TAIL,
            *(c for c in GRAPH_COLUMNS if any(c in row for row in rows))]
    if latency:
        cols += LATENCY_COLUMNS
    cols += ["error", *extra_tail]
    return cols


def frame(rows: Sequence[Mapping[str, Any]], *, latency: bool, extra_head: Iterable[str] = (),
          extra_tail: Iterable[str] = ()) -> "Any":
    """Rows as a DataFrame with the column order above; subgraph counts missing in a valid row are 0."""
    import pandas as pd

    cols = column_order(rows, latency=latency, extra_head=extra_head, extra_tail=extra_tail)
    filled = []
    for row in rows:
        row = dict(row)
        if not row.get("error"):
            for c in cols:
                if c.startswith("subgraphs_") and c not in row:
                    row[c] = 0
        filled.append(row)
    df = pd.DataFrame(filled, columns=cols)
    whole = {row.name for row in settings.SETTINGS if row.annotation == "int"}  # whole-number settings
    for c in cols:
        if c.startswith("subgraphs") or c in whole or c in ("acc_subgraphs", "boundary_tensors", "accelerated",
                                                              "cache_hits", "cache_misses", *GRAPH_COLUMNS):
            if len(df) and not _all_ints(df[c]):
                df[c] = pd.Series([row.get(c) for row in filled], dtype=object)  # an error row's raw 2.7
                continue
            if len(df) and df[c].notna().all():
                df[c] = df[c].astype("int64")
            elif len(df):
                df[c] = df[c].astype("Int64")
    return df


def _all_ints(series: Any) -> bool:
    """True when every non-missing value of `series` is a whole number (not a bool)."""
    import numbers

    return all(isinstance(v, numbers.Integral) and not isinstance(v, bool) or
               (isinstance(v, float) and (v != v or v.is_integer())) for v in series if v is not None)
