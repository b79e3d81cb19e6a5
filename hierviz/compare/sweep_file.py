"""hv.sweep's rows kept in a file as they finish (`out="sweep.csv"` or `.parquet`): each
finished row is written at once (the whole table, replaced atomically, so the file is always a
complete table), and a rerun reads the rows already there for the same model and settings and
skips them. A row's `model_key` is the captured graph's fingerprint, its `settings_key` that of
its setting and the measure options (SHA-256 prefixes, `json_digest`: a table an older hierviz
wrote with SHA-1 keys is measured again).

Sweeps that write one file at once (two processes, two notebooks) lose nothing: a row is added
under an exclusive lock on a sidecar file (`.<name>.lock`, hierviz.foundation.file_lock), which
re-reads the table as it is now, puts the row in and writes it through a temp file of its own
before replacing the table; a temp file found while holding the lock was left by a writer that
died, and is removed. The rows a rerun skips are checked
(their counts whole numbers, their figures numbers): a table edited into something else is one
ConfigError naming the file, the row and the column.
"""

from __future__ import annotations

import glob
import importlib
import math
import numbers
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

from hierviz.compare import columns
from hierviz.settings.config import Config
from hierviz.errors import ConfigError
from hierviz.foundation.digests import json_digest
from hierviz.foundation.file_lock import lock_path, locked

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


# the columns whose cells a rerun reuses as numbers: counts (whole numbers) and figures
WHOLE = ("subgraphs", "acc_subgraphs", "boundary_tensors", "accelerated", "fallbacks", "cache_hits", "cache_misses",
         *columns.GRAPH_COLUMNS)
FIGURES = ("coverage", "accelerated_coverage", "median_ms", "p10_ms", "p90_ms", "cv", "speedup", "max_abs_error",
           "compile_s")


def _number(name: str, value: Any) -> Any:
    """A reused cell as the number it should be (CSV gives a column with one text cell as text
    throughout: '5' is read back as 5); ValueError saying what it should be when it is not one."""
    whole = name in WHOLE or name.startswith("subgraphs_")
    if value is None or not (whole or name in FIGURES):
        return value
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError("a whole number" if whole else "a number") from None
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ValueError("a whole number" if whole else "a number")
    if math.isnan(value):
        return None
    if whole:
        if not float(value).is_integer():
            raise ValueError("a whole number")
        return int(float(value))
    return value


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
        self.done = {r["settings_key"]: self._checked(r) for r in self._read() if r.get("model_key") == model}

    def _checked(self, row: dict[str, Any]) -> dict[str, Any]:
        """A row a rerun reuses, its counts and figures as numbers; ConfigError naming the cell."""
        out = {}
        for name, value in row.items():
            try:
                out[name] = _number(name, value)
            except ValueError as exc:
                raise ConfigError(f"out={str(self.path)!r} holds a row of this model (settings_key "
                                  f"{row.get('settings_key')}) whose {name} is {value!r:.40}, not {exc}: the table was "
                                  "changed after hv.sweep wrote it. Delete that row (it is measured again) or give "
                                  "another file name.") from None
        return out

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
                              f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
                              "give another file name.") from None
        if not set(KEYS) <= set(df.columns):
            raise ConfigError(f"out={str(self.path)!r} exists and is not a table hv.sweep wrote (no model_key / "
                              "settings_key columns); give another file name.")
        df = df.astype(object).where(df.notna(), None)
        return df.to_dict("records")

    def add(self, row: dict[str, Any], key: str) -> None:
        """Keep one finished row: under the lock, the table as it is now with this row in it."""
        row = {**row, "model_key": self.model, "settings_key": key}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with locked(self.path):
                rows = [r for r in self._read()
                        if not (r.get("model_key") == self.model and r.get("settings_key") == key)]
                self._write([*rows, row])
        except OSError as exc:  # the lock file cannot be made
            raise ConfigError(f"cannot write out={str(self.path)!r}: {exc.strerror or exc} (its lock file "
                              f"{lock_path(self.path).name}).") from None
        self.done[key] = row

    def _write(self, rows: list[dict[str, Any]]) -> None:
        """The table replaced atomically, through a temp file of this writer's own (call it locked)."""
        import pandas as pd

        # a temp file found now is a dead writer's: a live one holds the lock while its temp file exists
        for stale in self.path.parent.glob(f".{glob.escape(self.path.name)}.*.tmp"):
            stale.unlink(missing_ok=True)
        df = pd.DataFrame(rows)
        try:
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
            os.close(fd)
        except OSError as exc:
            raise ConfigError(f"cannot write out={str(self.path)!r}: {exc.strerror or exc}.") from None
        try:
            if self.path.suffix.lower() == ".csv":
                df.to_csv(tmp, index=False)
            else:
                df.to_parquet(tmp, index=False)
            os.replace(tmp, self.path)
        except OSError as exc:
            raise ConfigError(f"cannot write out={str(self.path)!r}: {exc.strerror or exc}.") from None
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


__all__ = ["SweepFile", "model_key", "settings_key", "SUFFIXES"]
