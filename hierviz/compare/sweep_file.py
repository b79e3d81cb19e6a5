"""hv.sweep's rows kept in a file as they finish (`out="sweep.csv"` or `.parquet`): each
finished row is written at once (the whole table, replaced atomically, so the file is always a
complete table), and a rerun reads the rows already there for the same model and settings and
skips them. A row's `model_key` is the captured graph's fingerprint, its `settings_key` that of
its setting and the measure options (SHA-256 prefixes, `json_digest`: a table an older hierviz
wrote with SHA-1 keys is measured again).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Mapping

from hierviz.compare import columns
from hierviz.settings.config import Config
from hierviz.errors import ConfigError
from hierviz.foundation.digests import json_digest

SUFFIXES = (".csv", ".parquet")
KEYS = ("model_key", "settings_key")
PARQUET_ENGINES = ("pyarrow", "fastparquet")  # what pandas reads and writes Parquet with


def model_key(gm: Any) -> str:
    """The captured graph's fingerprint: its code and its inputs' shapes and dtypes."""
    inputs = [str(getattr(n.meta.get("val"), "shape", None)) + str(getattr(n.meta.get("val"), "dtype", None))
              for n in gm.graph.find_nodes(op="placeholder")]
    return json_digest([gm.code, inputs])


def captures_key(capture: Any) -> str:
    """A graph-by-graph capture's fingerprint (ir="torch_compile"): every graph's, in order."""
    return json_digest(["torch_compile", [model_key(g.graph) for g in capture.graphs]])


def settings_key(cfg: Config, measure: Mapping[str, Any] | None) -> str:
    """A setting's fingerprint, with the measure options (a measured row is not an unmeasured one)."""
    return json_digest([columns.config_columns(cfg), None if measure is None else dict(measure)])


def _check_parquet_engine(path: Path) -> None:
    """Refuses a .parquet `out` before any row runs when pandas has no Parquet engine."""
    for name in PARQUET_ENGINES:
        try:
            importlib.import_module(name)
            return
        except ImportError:
            continue
    raise ConfigError(f"out={path.name!r} needs pyarrow to write Parquet: pip install 'hierviz[parquet]' "
                      "(or pip install pyarrow); or use out='sweep.csv'.")


class SweepFile:
    """The table at `path` for one model: the rows already there, and rows added as they finish."""

    def __init__(self, path: Any, model: str) -> None:
        path = Path(path).expanduser()
        if path.suffix.lower() not in SUFFIXES:
            raise ConfigError(f"out must end in .csv or .parquet, not {path.name!r}.")
        if path.is_dir():
            raise ConfigError(f"out={str(path)!r} is a directory; give a file name, e.g. {path / 'sweep.csv'}.")
        if path.suffix.lower() == ".parquet":
            _check_parquet_engine(path)
        self.path, self.model = path, model
        self.rows: list[dict[str, Any]] = self._read()
        self.done = {r["settings_key"]: r for r in self.rows if r.get("model_key") == model}

    def _read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        import pandas as pd

        try:
            df = pd.read_csv(self.path) if self.path.suffix.lower() == ".csv" else pd.read_parquet(self.path)
        # a file that is not a sweep table: pandas' ParserError and pyarrow's ArrowInvalid are ValueErrors (a
        # file that is not text too), an unreadable file an OSError, a parquet type pandas cannot hold a TypeError
        except (OSError, ValueError, TypeError, NotImplementedError) as exc:
            raise ConfigError(f"out={str(self.path)!r} exists but cannot be read as a table "
                              f"({type(exc).__name__}: {exc}); give another file name.") from None
        if not set(KEYS) <= set(df.columns):
            raise ConfigError(f"out={str(self.path)!r} exists and is not a table hv.sweep wrote (no model_key / "
                              "settings_key columns); give another file name.")
        df = df.astype(object).where(df.notna(), None)
        return df.to_dict("records")

    def add(self, row: dict[str, Any], key: str) -> None:
        """Keep one finished row and write the table at once."""
        row = {**row, "model_key": self.model, "settings_key": key}
        self.rows = [r for r in self.rows if not (r.get("model_key") == self.model and r.get("settings_key") == key)]
        self.rows.append(row)
        self.done[key] = row
        self.write()

    def write(self) -> None:
        import pandas as pd

        df = pd.DataFrame(self.rows)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            if self.path.suffix.lower() == ".csv":
                df.to_csv(tmp, index=False)
            else:
                df.to_parquet(tmp, index=False)
        except OSError as exc:
            raise ConfigError(f"cannot write out={str(self.path)!r}: {exc.strerror or exc}.") from None
        os.replace(tmp, self.path)


__all__ = ["SweepFile", "model_key", "settings_key", "SUFFIXES"]
