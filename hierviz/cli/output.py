"""What the `hierviz` command prints besides its results: Torch-TensorRT imported without the
noise its import makes on a machine without a GPU, and warnings as one line each."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

from hierviz import trt


@contextlib.contextmanager
def _quiet_stderr() -> Any:
    """Silence stderr, file descriptor included, and torch / Torch-TensorRT log warnings."""
    import logging

    loggers = [logging.getLogger(name) for name in ("torch_tensorrt", "torch")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    sys.stderr.flush()
    saved = devnull = None
    try:
        saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
    except OSError:  # no real file descriptor 2: the logging levels still apply
        pass
    try:
        yield
    finally:
        sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)
        if devnull is not None:
            os.close(devnull)
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def import_tensorrt_quietly(args: argparse.Namespace) -> None:
    """Import Torch-TensorRT now, hiding what its import prints without a GPU (a CUDA warning
    from C++, optional-dependency and deprecation lines), which would bury the report and the
    one-line errors. `--debug` shows it; `hierviz info --check` says whether the import worked."""
    if getattr(args, "debug", False):
        trt.available()
    else:
        with _quiet_stderr():
            trt.available()
    one_line_warnings()  # torch_tensorrt's import routes warnings to logging (captureWarnings)


def _show_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                  line: str | None = None) -> None:
    del category, filename, lineno, line  # warnings.showwarning's signature: the message alone is printed
    text = " ".join(str(message).split())
    print(f"warning: {text}", file=sys.stderr if file is None else file)


def one_line_warnings() -> None:
    """Warnings print as one line, `warning: <message>` (not logging's `WARNING:py.warnings:
    file:line: Category ... source line`)."""
    import logging
    import warnings

    logging.captureWarnings(False)
    warnings.showwarning = _show_warning
