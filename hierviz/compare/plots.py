"""The two plots people ask for, from a `hv.sweep` DataFrame; each returns the matplotlib Axes."""

from __future__ import annotations

from typing import Any

import pandas as pd

from hierviz.errors import ConfigError
from hierviz.compare.columns import FALLBACK, setting_columns


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError("plotting needs matplotlib: pip install matplotlib") from exc
    _, ax = plt.subplots(figsize=(7, 4))
    return ax


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise ConfigError("pass the DataFrame returned by hv.sweep(...)")
    return df[df["error"].isna()] if "error" in df.columns else df


def varying(df: pd.DataFrame, exclude: tuple[str, ...] = ()) -> list[str]:
    """Config columns that take more than one value in `df`."""
    return [c for c in setting_columns() if c in df.columns and c not in exclude and df[c].astype(str).nunique() > 1]


def _series_label(row: pd.Series, keys: list[str]) -> str:
    if not keys:
        return "latency"
    return ", ".join(f"{k}={row[k] if str(row[k]) else '(none)'}" for k in keys)


def plot_latency(df: pd.DataFrame, *, x: str = "min_block_size", y: str = "median_ms",
                 by: str | list[str] | None = None, baseline: bool = True, ax: Any = None) -> Any:
    """Latency against `x` (min_block_size) from a measured sweep: one line per combination of
    the other config columns that vary (or `by`), with the p10–p90 band and the eager baseline."""
    data = _ok(df)
    if y not in data.columns:
        raise ConfigError(f"the sweep has no {y!r} column: run hv.sweep(..., measure=True) first.")
    if x not in data.columns:
        raise ConfigError(f"no column {x!r} in the sweep; columns are {list(data.columns)}")
    data = data[data[y].notna()]
    if data.empty:
        raise ConfigError("no measured configurations to plot (every row has an error or no latency).")
    keys = [by] if isinstance(by, str) else list(by) if by is not None else varying(data, exclude=(x,))
    ax = _axes(ax)
    groups = data.groupby(keys, sort=False) if keys else [((), data)]
    for _, group in groups:
        group = group.sort_values(x)
        label = _series_label(group.iloc[0], keys)
        xs = group[x].astype(str) if group[x].dtype == object else group[x]
        (line,) = ax.plot(xs, group[y], marker="o", label=label)
        if "p10_ms" in group and "p90_ms" in group and y == "median_ms" and group["p10_ms"].notna().all():
            ax.fill_between(xs, group["p10_ms"].astype(float), group["p90_ms"].astype(float),
                            alpha=0.2, color=line.get_color())
    if baseline and "baseline_ms" in data.columns and data["baseline_ms"].notna().any():
        ax.axhline(float(data["baseline_ms"].median()), color="gray", linestyle="--", label="eager PyTorch")
    elif baseline and "speedup" in data.columns and y == "median_ms" and data["speedup"].notna().any():
        eager = (data["median_ms"].astype(float) * data["speedup"].astype(float)).median()
        ax.axhline(float(eager), color="gray", linestyle="--", label="eager PyTorch")
    if pd.api.types.is_integer_dtype(data[x]):
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(x)
    ax.set_ylabel("latency (ms, median; band p10–p90)" if y == "median_ms" else y)
    ax.set_title(f"{y} vs {x}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return ax


def plot_subgraphs(df: pd.DataFrame, *, x: str | None = None, ax: Any = None) -> Any:
    """Stacked bars: subgraphs per backend for each setting (`x`: a config column; by default
    the one that varies, or a label combining all that vary)."""
    data = _ok(df).copy()
    cols = [c for c in data.columns if c.startswith("subgraphs_")]
    if not cols:
        raise ConfigError("no subgraphs_<backend> columns: pass the DataFrame returned by hv.sweep(...)")
    if data.empty:
        raise ConfigError("no valid configurations to plot (every row has an error).")
    if x is None:
        keys = varying(data)
        if len(keys) == 1:
            x = keys[0]
        else:
            data["setting"] = [" ".join(f"{k}={r[k]}" for k in keys) or "config" for _, r in data.iterrows()]
            x = "setting"
    elif x not in data.columns:
        raise ConfigError(f"no column {x!r} in the sweep; columns are {list(data.columns)}")
    cols = [c for c in cols if c != f"subgraphs_{FALLBACK}"] + [c for c in cols if c == f"subgraphs_{FALLBACK}"]
    table = data.set_index(data[x].astype(str))[cols].fillna(0)
    table.columns = [c[len("subgraphs_"):] for c in cols]
    ax = _axes(ax)
    colors = backend_colors(list(table.columns))
    table.plot(kind="bar", stacked=True, ax=ax, color=colors, width=0.8)
    ax.set_xlabel(x)
    ax.set_ylabel("subgraphs")
    ax.set_title(f"subgraphs per backend vs {x}")
    ax.legend(title="backend", fontsize="small")
    ax.tick_params(axis="x", labelrotation=0 if len(table) <= 8 else 45)
    return ax


def backend_colors(backends: list[str]) -> list[str]:
    """The diagram's colour of each backend, so plots and the Explorer match the diagrams."""
    from hierviz.drawing import palette

    return [palette.color(b) for b in backends]
