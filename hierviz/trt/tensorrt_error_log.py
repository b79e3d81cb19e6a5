"""TensorRT's logger with its errors kept while a build runs (`TensorRTErrorLog`): the builder
returns no engine and says why only through its logger.
"""

from __future__ import annotations

from typing import Any

from hierviz.trt.loading import tensorrt_library


class TensorRTErrorLog:
    """TensorRT's logger, its errors kept while a build runs (the builder returns None and
    says why only through its logger)."""

    def __init__(self, logger: Any) -> None:
        self.logger = logger
        self.errors: list[str] = []
        self._log = logger.log

    def __enter__(self) -> "TensorRTErrorLog":
        trt = tensorrt_library()
        errors, log = self.errors, self._log

        def kept(severity: Any, msg: str) -> None:
            if severity in (trt.ILogger.Severity.ERROR, trt.ILogger.Severity.INTERNAL_ERROR):
                errors.append(str(msg))
            else:
                log(severity, msg)

        self.logger.log = kept
        return self

    def __exit__(self, *exc: Any) -> None:
        self.logger.log = self._log


__all__ = ["TensorRTErrorLog"]
