"""What torch prints and logs while hierviz calls it, kept instead of shown.

A failed `torch.export` prints the partial graph to stderr (1,676 lines for torchvision's
SSDlite) and logs warnings through torch's loggers, before the exception that says what went
wrong. `kept()` collects, from the calling thread only, what is written to `sys.stderr` and
what reaches a logging handler of torch's loggers (or the root logger, or logging's last resort)
while it is open; other threads print as usual. The text stays available
(`KeptOutput.text()`): `CaptureError.torch_output`, and the CLI's `--verbose`.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
from typing import Any, Iterator


class KeptOutput:
    """The text one `kept()` context collected."""

    def __init__(self) -> None:
        self._buffer = io.StringIO()

    def write(self, text: str) -> int:
        return self._buffer.write(text)

    def text(self) -> str:
        return self._buffer.getvalue()


class _ThreadStderr:
    """sys.stderr while some `kept()` is open: a keeping thread's writes go to its KeptOutput,
    every other thread's to the real stream."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def write(self, text: str) -> int:
        kept = _OWNERS.get(threading.get_ident())
        return kept.write(text) if kept is not None else self.real.write(text)

    def flush(self) -> None:
        if threading.get_ident() not in _OWNERS:
            self.real.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


_OWNERS: dict[int, KeptOutput] = {}  # thread id -> its open kept() context's output
_LOCK = threading.Lock()


class _Keep(logging.Filter):
    """A handler filter that keeps the owner thread's records (formatted) instead of emitting them."""

    def __init__(self, owner: int, kept: KeptOutput) -> None:
        super().__init__()
        self._owner, self._kept = owner, kept

    def filter(self, record: logging.LogRecord) -> bool:
        if record.thread != self._owner:
            return True
        try:
            self._kept.write(f"{record.levelname} {record.name}: {record.getMessage()}\n")
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is dropped
            pass
        return False


def _handlers() -> list[logging.Handler]:
    """The handlers of the root logger, logging's last resort and every torch logger."""
    found: list[logging.Handler] = list(logging.getLogger().handlers)
    if logging.lastResort is not None:
        found.append(logging.lastResort)
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if (name == "torch" or name.startswith("torch.")) and isinstance(logger, logging.Logger):
            found.extend(logger.handlers)
    return list(dict.fromkeys(found))


@contextlib.contextmanager
def kept() -> Iterator[KeptOutput]:
    """Collect what this thread writes to sys.stderr and logs through torch's (or the root)
    logging handlers, instead of showing it; everything is put back after."""
    out = KeptOutput()
    owner = threading.get_ident()
    keep = _Keep(owner, out)
    handlers = _handlers()
    for handler in handlers:
        handler.addFilter(keep)
    with _LOCK:
        outer = _OWNERS.get(owner)
        _OWNERS[owner] = out
        if not isinstance(sys.stderr, _ThreadStderr):
            sys.stderr = _ThreadStderr(sys.stderr)
    try:
        yield out
    finally:
        with _LOCK:
            if outer is not None:
                _OWNERS[owner] = outer
            else:
                _OWNERS.pop(owner, None)
            if not _OWNERS and isinstance(sys.stderr, _ThreadStderr):
                sys.stderr = sys.stderr.real
        for handler in handlers:
            handler.removeFilter(keep)

__all__ = ["KeptOutput", "kept"]
