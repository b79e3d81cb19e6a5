"""Writing pieces of a file on a thread of their own, so that whoever makes them goes on making
the next while the disk takes this one (TensorRT's builder serializing an engine: on a busy
machine, writing a 350 MB engine into the page cache took as long as hashing and serializing it).

At most `ahead` pieces wait (the memory a slow disk costs is bounded: a 2.2 GB engine is never
whole in memory). Where the disk refuses a piece (full, read-only), that piece and every one
after it are kept in memory (`unwritten`), so the caller can read back what the file took
(`written` bytes, whole pieces) and go on without the file. A `hasher` given takes every piece
on that thread too (SHA-256 over a buffer lets go of the interpreter's lock: the maker goes on meanwhile).
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from hierviz.foundation import temp_files


class QueuedWrites:
    """Pieces written, in order, to the open descriptor `fd` by a thread of this object's.
    `put(piece)` each (it waits while `ahead` pieces wait already), then `finish()`, which waits
    until every piece was written or kept. After it: `written` (bytes the file took, whole
    pieces), `refused` (the OSError the disk raised, or None) and `unwritten` (the pieces from
    the refused one on). What else writing raised is raised by `finish()`. `hasher` (`update(piece)`), when
    given, takes every piece put, in order, written or kept, before it is written."""

    def __init__(self, fd: int, ahead: int = 2, hasher: Any = None) -> None:
        self.fd = fd
        self.hasher = hasher
        self.written = 0
        self.refused: OSError | None = None
        self.unwritten: list[bytes] = []
        self._failed: BaseException | None = None
        self._offered = 0  # bytes put
        self._pieces: queue.Queue[bytes | None] = queue.Queue(maxsize=ahead)
        self._ended = False
        self._thread = threading.Thread(target=self._write, name="hierviz-file-writer", daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        """Whether the thread ended (after `finish()`: every piece written or kept)."""
        return not self._thread.is_alive()

    def put(self, piece: bytes) -> None:
        """Queue `piece` (bytes this object may keep: nobody changes them)."""
        self._offer(piece)
        self._offered += len(piece)

    def _offer(self, item: bytes | None) -> None:
        """Queue `item` (None: the end), waiting while `ahead` wait; OSError when the thread ended
        without taking it (it raised what it should not have: nobody waits for it forever)."""
        while True:
            try:
                self._pieces.put(item, timeout=1.0)
                return
            except queue.Full:
                if self.done:
                    raise OSError("the thread writing the file ended before it took every piece") from None

    def finish(self) -> None:
        """Wait until every piece queued was written or kept; raise what writing raised other than
        the disk's refusal (an OSError when the thread ended without taking every piece). Safe
        to call again (after an interrupt in the wait)."""
        if not self._ended and not self.done:
            self._offer(None)
            self._ended = True
        self._thread.join()
        if self._failed is not None:
            failed, self._failed = self._failed, None
            raise failed
        if self.written + sum(map(len, self.unwritten)) != self._offered:
            raise OSError(f"the thread writing the file took {self.written} of the {self._offered} bytes put")

    def _write(self) -> None:
        while True:
            piece = self._pieces.get()
            if piece is None:
                return
            if self.hasher is not None and self._failed is None:
                try:
                    self.hasher.update(piece)
                except BaseException as exc:  # noqa: BLE001 - raised to the caller by finish()
                    self._failed = exc
            if self.refused is None and self._failed is None:
                try:
                    temp_files.write_all(self.fd, piece)
                    self.written += len(piece)
                    continue
                except OSError as exc:
                    self.refused = exc
                except MemoryError as exc:  # raised to the caller by finish()
                    self._failed = exc
            self.unwritten.append(piece)


__all__ = ["QueuedWrites"]
