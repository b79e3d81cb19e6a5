"""Torch-TensorRT's logging held back while it converts and builds (`QuietLogging`): nothing
reaches stderr, its logged errors are kept for the build's details, TensorRT's own apart.
"""

from __future__ import annotations

import logging
from typing import Any

# Torch-TensorRT's loggers: its own, and the one TensorRT's messages go through while it converts
# (not a child of the first: its name has no dot)
_TRT_LOGGERS = ("torch_tensorrt", "torch_tensorrt [TensorRT Conversion Context]")


class QuietLogging(logging.Handler):
    """Torch-TensorRT's logging held back while it converts and builds: INFO/WARNING dropped (it
    logs every layer), errors kept in `lines` for the build's details (a failure's row says
    them) or, when it built anyway, its warnings; nothing reaches stderr. `tensorrt_lines`: those
    of them TensorRT logged (through Torch-TensorRT's logger of its conversion context)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []
        self.tensorrt_lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if record.name == _TRT_LOGGERS[1]:
            self.tensorrt_lines.append(record.getMessage())

    def __enter__(self) -> "QuietLogging":
        self.saved = [(logger, logger.level, logger.propagate) for logger in map(logging.getLogger, _TRT_LOGGERS)]
        for logger, level, _ in self.saved:
            logger.setLevel(max(level, logging.ERROR))
            logger.propagate = False
            logger.addHandler(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        for logger, level, propagate in self.saved:
            logger.removeHandler(self)
            logger.setLevel(level)
            logger.propagate = propagate


__all__ = ["QuietLogging"]
