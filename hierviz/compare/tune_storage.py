"""hv.tune's trials kept in Optuna's own database storage (`storage="sqlite:///tune.db"`, any
URL Optuna's RDB storage takes): the study opened, or resumed when it exists, each finished
trial's table row saved with it as a user attribute, and those rows read back, so a tune that
died or was stopped continues from its finished trials instead of measuring them again. The
study keeps the settings it was started with (labels the same in every process) and the capture
its trials ran on (`ir`, `target_device`); a run with other settings or another capture is refused
rather than mixed in.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any

from hierviz.errors import ConfigError
from hierviz.foundation.file_lock import locked

ROW = "hierviz_row"  # the user attribute holding a finished trial's row (JSON)
SETUP = "hierviz_setup"  # the study's user attribute: the base setting, the space and the capture it was started with
CAPTURE = ("ir", "target_device")  # what the trials were captured with (kept since these were checked)
DEFAULT_STUDY = "hierviz-tune"


def check_storage(storage: Any, study_name: Any) -> None:
    """ConfigError for a storage that is not an Optuna RDB URL, or a study_name without one."""
    if storage is None:
        if study_name is not None:
            raise ConfigError("study_name names a study in storage=...; pass storage='sqlite:///tune.db' too.")
        return
    if not isinstance(storage, str) or "://" not in storage:
        raise ConfigError(f"storage must be a database URL Optuna's RDB storage takes, e.g. "
                          f"storage='sqlite:///tune.db', not {storage!r}.")
    if study_name is not None and (not isinstance(study_name, str) or not study_name.strip()):
        raise ConfigError(f"study_name must be a non-empty string, not {study_name!r}.")


def database_file(storage: str) -> Path | None:
    """The file of an SQLite storage URL, else None (another database, or SQLite in memory)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(storage)
    except ArgumentError:  # Optuna says what is wrong with the URL
        return None
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database).expanduser()


def open_study(optuna: Any, storage: str | None, study_name: str | None, sampler: Any, pruner: Any) -> Any:
    """The study: in memory, or in `storage` (created, or loaded when it exists). An SQLite file
    is opened under its lock (hierviz.foundation.file_lock): two tunes that open a new one at once
    would otherwise both make its tables, and one would fail."""
    if storage is None:
        return optuna.create_study(direction="minimize", sampler=sampler, pruner=pruner)
    from sqlalchemy.exc import SQLAlchemyError  # Optuna's RDB storage is SQLAlchemy's

    file = database_file(storage)
    try:
        with locked(file) if file is not None else contextlib.nullcontext():
            return optuna.create_study(direction="minimize", sampler=sampler, pruner=pruner, storage=storage,
                                       study_name=study_name or DEFAULT_STUDY, load_if_exists=True)
    # SQLAlchemy's errors for a bad URL, a locked file ...; Optuna's own (a schema of another version);
    # a database driver that is not installed; a file that cannot be made
    except (SQLAlchemyError, optuna.exceptions.OptunaError, ImportError, OSError, ValueError) as exc:
        raise ConfigError(f"cannot open the tune storage {storage!r}: {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:200]}") from None


def check_setup(study: Any, setup: dict[str, Any], storage: str) -> None:
    """Keep `setup` (labels of the base setting and of the space's choices, and the `CAPTURE`
    the trials run on: ir, target_device) with a new study; ConfigError when the stored study was
    started with other settings or on another capture. A study kept before the capture was
    checked is resumed, and keeps this run's capture from then on."""
    stored = study.user_attrs.get(SETUP)
    if stored is None:  # a new study (or one an older hierviz kept without its settings)
        study.set_user_attr(SETUP, setup)
        return
    unrecorded = {name: setup[name] for name in CAPTURE if name in setup and name not in stored}
    stored = {**stored, **unrecorded}
    differ = [name for name in sorted(set(stored) | set(setup)) if stored.get(name) != setup.get(name)]
    if differ:
        texts = [_difference(name, stored.get(name), setup.get(name)) for name in differ]
        same = "".join(f"{name}={stored.get(name)!r} and " for name in CAPTURE if name in differ)
        raise ConfigError(f"hv.tune: study {study.study_name!r} in {storage} was run with other settings "
                          f"({'; '.join(texts[:3])}{'; ...' if len(texts) > 3 else ''}): resume it with "
                          f"{same}the same base and space, or pass another study_name to start a new study.")
    if unrecorded:
        study.set_user_attr(SETUP, stored)


def _difference(name: str, was: Any, now: Any) -> str:
    """'space support was [...], now [...]': for lists of choices, only the choices that differ."""
    if isinstance(was, list) and isinstance(now, list):
        gone, new = [v for v in was if v not in now], [v for v in now if v not in was]
        if gone or new:
            was, now = gone, new
    return f"{name} was {_short(was)}, now {_short(now)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def finished(optuna: Any, study: Any) -> list[Any]:
    """The study's trials hv.tune finished earlier (their rows saved), in order."""
    done = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.FAIL)
    return [t for t in study.get_trials(deepcopy=False) if t.state in done and ROW in t.user_attrs]


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def save_row(trial: Any, row: dict[str, Any]) -> None:
    """Keep `row` with the (not yet finished) Optuna trial."""
    trial.set_user_attr(ROW, json.dumps({k: _plain(v) for k, v in row.items()}, default=str))


def load_row(trial: Any) -> dict[str, Any]:
    """The row saved with a finished trial (intervals back to tuples)."""
    row = json.loads(trial.user_attrs[ROW])
    if isinstance(row.get("speedup_ci"), list):
        row["speedup_ci"] = tuple(row["speedup_ci"])
    return row


__all__ = ["ROW", "SETUP", "CAPTURE", "DEFAULT_STUDY", "check_storage", "open_study", "check_setup", "finished",
           "save_row", "load_row"]
