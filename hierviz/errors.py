"""The exceptions hierviz raises. Every expected failure is a HiervizError whose message
says what went wrong and what to do about it."""

from __future__ import annotations

import sys
from pathlib import Path


class HiervizError(Exception):
    """Base class of every error hierviz raises on purpose."""


class ConfigError(HiervizError, ValueError):
    """A Config field is invalid (unknown op, empty priority, min_block_size < 1, ...)."""


class CaptureError(HiervizError):
    """The model could not be exported / lowered to an aten graph."""


class RenderError(HiervizError):
    """A diagram could not be drawn (for example graphviz's `dot` is missing)."""


class MeasureError(HiervizError):
    """A partition could not be compiled or timed."""


class TensorRTUnavailableError(MeasureError):
    """torch_tensorrt is not installed or cannot build engines here. A MeasureError: hv.measure
    and Partition.compile raise it for TensorRT subgraphs (unless on_error="fallback")."""


class ConfigWarning(UserWarning):
    """A setting that is valid but probably not what was meant (e.g. support for a custom
    backend that is not in priority, so it is ignored)."""


def user_stacklevel() -> int:
    """The `stacklevel` for `warnings.warn` that points at the first caller outside hierviz,
    so a warning shows the user's line, not ours."""
    package = str(Path(__file__).parent)
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level
