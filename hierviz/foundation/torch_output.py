"""What torch prints and logs while hierviz calls it, kept instead of shown.

A failed `torch.export` prints the partial graph to stderr (1,676 lines for torchvision's
SSDlite) and logs warnings through torch's loggers, before the exception that says what went
wrong. `kept()` collects, from the calling thread only, what is written to `sys.stderr` and
what reaches a logging handler of torch's loggers (or the root logger, or logging's last resort)
while it is open; other threads print as usual. The text stays available
(`KeptOutput.text()`): `CaptureError.torch_output`, and the CLI's `--verbose`.

What a call that succeeded printed is not shown either (hierviz says nothing on success except
what the user must act on): `hold(what, text)` keeps the last few such texts for `held()`,
which the CLI's `--verbose` prints. `native_output()` also catches what C++ code writes to the
process's stdout and stderr (TensorRT's builder, Torch-TensorRT's import).
"""

from __future__ import annotations

import collections
import contextlib
import io
import logging
import os
import sys
import tempfile
import threading
from typing import Any, Iterator

logger = logging.getLogger(__name__)


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
        except Exception:  # a record that cannot be formatted (its lazy argument raised) is dropped, as
            # logging drops it; a filter must not raise into the code that logged
            logger.debug("a %s log record could not be formatted", record.name, exc_info=True)
        return False


def _handlers() -> list[logging.Handler]:
    """The handlers of the root logger, logging's last resort and every torch logger."""
    found: list[logging.Handler] = list(logging.getLogger().handlers)
    if logging.lastResort is not None:
        found.append(logging.lastResort)
    for name, torch_logger in list(logging.root.manager.loggerDict.items()):
        if (name == "torch" or name.startswith("torch.")) and isinstance(torch_logger, logging.Logger):
            found.extend(torch_logger.handlers)
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

_HELD: "collections.deque[str]" = collections.deque(maxlen=20)


def hold(what: str, text: str) -> None:
    """Keep `text`, what `what` printed while it succeeded, for `held()` (the last 20 kept)."""
    if text.strip():
        _HELD.append(f"--- what {what} printed:\n{text.rstrip()}\n")


def held() -> str:
    """What successful calls printed and hierviz held back (`hold`), oldest first."""
    return "".join(_HELD)


@contextlib.contextmanager
def native_output() -> Iterator[list[str]]:
    """What anything writes to the process's stdout and stderr file descriptors while the block
    runs (C++ code included), held back and put, as lines, in the list yielded (filled when the
    block ends). Python's sys.stdout/sys.stderr are flushed first, so nothing of theirs is lost."""
    lines: list[str] = []
    saved: list[tuple[int, int]] = []
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    with tempfile.TemporaryFile() as sink:
        for fd in (1, 2):
            try:
                saved.append((fd, os.dup(fd)))
                os.dup2(sink.fileno(), fd)
            except OSError:
                continue
        try:
            yield lines
        finally:
            for fd, copy in saved:
                os.dup2(copy, fd)
                os.close(copy)
            sink.seek(0)
            lines.extend(sink.read().decode(errors="replace").splitlines())


@contextlib.contextmanager
def held_back(what: str, *, native: bool = True) -> Iterator[None]:
    """Nothing `what` prints shows (Python's stderr, torch's logging, and with `native` C++ writes
    to the file descriptors, every thread's); all of it is `hold`-ed for --verbose when the block
    ends, however it ends."""
    said = KeptOutput()
    lines: list[str] = []
    try:
        with kept() as said, (native_output() if native else contextlib.nullcontext(lines)) as lines:
            yield
    finally:
        hold(what, said.text() + "".join(f"{line}\n" for line in lines))


__all__ = ["KeptOutput", "kept", "hold", "held", "held_back", "native_output"]
