"""Streaming a serialized engine into a file: TensorRT's builder writes the engine into a temp
file as it serializes it, hashing what it writes (`serialize_engine`), and `EngineFile` is that
file, the caller's to move into place, deleted once dropped. The disk takes the pieces on a
thread of its own (hierviz.foundation.queued_writes), so the builder hands the next over
meanwhile, and a caller may go on while the last are written (`wait=False`, then
`EngineFile.finish()`: the build cache moves the file into place after `part.build()` returned).

`build_serialized_network_to_stream`, where the installed TensorRT has it: a 2.2 GB engine then
never lies whole in memory beside the builder's own copy of the weights. Without it (or with a
folder that cannot be written) the builder's serialized engine in memory is the answer; so is
an engine the folder stops taking part-way (a full disk): what was written is read back and the
rest kept in memory, the build goes on and the build cache says it could not keep it. The temp
file is the build cache's (a hierviz.foundation.disk_store.DiskStore: named for its writer, put
into the store as a WrittenFile, by a rename); one a killed build left is removed by the next build
cache opened, or, in the system's temp folder, by the next build written there.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any

from hierviz.errors import BuildError
from hierviz.foundation import temp_files
from hierviz.foundation.digests import data_hasher
from hierviz.foundation.disk_store import DiskStore
from hierviz.foundation.queued_writes import QueuedWrites
from hierviz.trt.loading import tensorrt_library

TMP_PREFIX = temp_files.PREFIX  # an engine being written (the engine store's name for a file not yet in place)
SUFFIX = ".engine"
AHEAD = 4  # TensorRT's pieces (64 MiB each) waiting for the disk at most: it hands a 350 MB engine over without waiting
_SWEPT: set[str] = set()  # system temp folders whose stale engines this process removed


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _discard(path: Path, writer: Any) -> None:
    """Delete an engine file, once the thread writing it (if any) is done."""
    if writer is not None:
        writer.remove()
    _unlink(path)


class EngineFile:
    """A serialized engine that a build wrote to `path` (`size` bytes, SHA-256 `digest`, the
    one hierviz.foundation.digests.data_digest gives of its bytes). It is the caller's to move
    into place (`move_to`); a file never moved is deleted when the object is dropped. One whose
    last pieces are still being written (`serialize_engine(wait=False)`: `written` is False)
    is `finish()`ed first (its `digest` is known then: the pieces are hashed as they are written)."""

    def __init__(self, path: Path, size: int, digest: str, writer: Any = None) -> None:
        self.path, self.size, self.digest = path, size, digest
        self._writer = writer  # the stream writer still writing the file, or None
        self._delete = weakref.finalize(self, _discard, path, writer)

    def __repr__(self) -> str:
        return f"EngineFile({str(self.path)!r}, {self.size} bytes)"

    @property
    def kept(self) -> bool:
        """Whether the file is still this object's (neither moved nor deleted)."""
        return self._delete.alive

    @property
    def written(self) -> bool:
        """Whether the file holds the whole engine (or `finish()` said otherwise)."""
        return self._writer is None

    def finish(self) -> "EngineFile | bytearray":
        """Wait until the file holds the whole engine: this EngineFile. Where its folder stopped
        taking it part-way (a full disk), the engine in memory (what the file took read back, the
        file deleted); a BuildError when it can be had neither way (nothing is left then)."""
        writer, self._writer = self._writer, None
        if writer is None:
            return self
        try:
            memory = _finish(writer, self.path.parent)
        except BaseException:
            self.discard()
            raise
        if memory is not None:
            self.discard()
            return memory
        self.digest = writer.sha256.hexdigest()
        return self

    def move_to(self, destination: Path) -> None:
        """Move the engine to `destination` (a rename within one filesystem, else a copy)."""
        if not self.written:
            raise RuntimeError(f"{self!r} is still being written: finish() it before moving it")
        try:
            os.replace(self.path, destination)
        except OSError:
            if not self.path.exists():
                raise
            shutil.move(self.path, destination)  # another filesystem: copied, then removed
        self._delete.detach()
        self.path = destination

    def discard(self) -> None:
        """Delete the file now (it is not kept)."""
        self._delete()


def serialize_engine(builder: Any, net: Any, config: Any, folder: Path | None, *, wait: bool = True) -> Any:
    """TensorRT's build of `net`: an EngineFile written into `folder` (the system's temp folder
    when None) as it is serialized, where the builder has the stream API and the folder can be
    written; else the builder's serialized engine in memory (also when the folder stops taking
    it part-way: a full disk). None when the builder gives no engine (no file is left then, nor
    on an error or an interrupt). `wait=False`: it returns once TensorRT has handed over every
    piece, the last of them maybe still being written: the EngineFile's `finish()` waits for
    them (so a caller goes on meanwhile)."""
    stream = getattr(builder, "build_serialized_network_to_stream", None)
    where = Path(folder) if folder is not None else Path(tempfile.gettempdir())
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError:
        stream = None
    if stream is None or not os.access(where, os.W_OK | os.X_OK):
        return builder.build_serialized_network(net, config)
    if folder is None:
        store = loose_engines(where)
        if str(where) not in _SWEPT:
            _SWEPT.add(str(where))
            store.sweep_temp()
    else:
        store = DiskStore(where, sweep=False)  # the build cache's folder: it sweeps it when it opens
    writer = _writer(store)
    try:
        built = stream(net, config, writer)
        if wait or writer.failed is not None or not built:
            _finish(writer, where)
    except BaseException:
        writer.remove()
        raise
    if not built:
        writer.remove()
        return None
    if writer.memory is not None:  # the folder could not hold it: the engine, in memory
        return writer.memory
    if writer.path is None:
        return None
    return EngineFile(writer.path, writer.size, writer.sha256.hexdigest() if wait else "", None if wait else writer)


def _finish(writer: Any, where: Path) -> bytearray | None:
    """Wait until `writer`'s file holds every piece: None; or the engine in memory where the
    folder refused part of it; raise what writing it raised (a BuildError where the folder
    refused it and what it took could not be read back)."""
    writer.close()
    if isinstance(writer.failed, OSError):  # the folder stopped taking it, and what it took could not be read back
        raise BuildError(f"part.build(): the engine could not be written to {where} nor read back from it "
                         f"({writer.failed}); check that disk, or set HIERVIZ_CACHE_DIR to another folder, then "
                         "build() again; nothing was stored") from writer.failed
    if writer.failed is not None:
        raise writer.failed
    return writer.memory


def loose_engines(folder: Path | None = None) -> DiskStore:
    """The engines streamed into the system's temp folder (or `folder`) with the build cache off:
    its temp files of this suffix only (it is everyone's folder)."""
    return DiskStore(Path(tempfile.gettempdir()) if folder is None else folder, temp_suffix=SUFFIX, sweep=False)


def _writer(store: DiskStore) -> Any:
    """A TensorRT stream writer into a new temp file of `store` (made at the first write, so
    that none is there while the builder works, nor after a build that wrote nothing), hashing
    each piece TensorRT hands over (the digest data_digest gives of the whole) and writing it on
    a thread of its own (hierviz.foundation.queued_writes), so that the builder makes the next
    piece meanwhile (and a build returns before its engine is hashed: `wait=False`); `close()`
    waits until the file holds them all. Where the folder stops taking it (a full disk, a folder
    that cannot be written), what was written is read back and the engine goes on in `.memory`
    (the file removed). What else writing raises (out of memory,
    an interrupt) is kept on `.failed` (TensorRT is told nothing was written and stops), to be
    raised once the builder returns."""
    trt = tensorrt_library()

    class Writer(trt.IStreamWriter):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            trt.IStreamWriter.__init__(self)
            self.path: Path | None = None
            self.fd: int | None = None
            self.queued: QueuedWrites | None = None
            self.size = 0
            self.sha256 = data_hasher()
            self.failed: BaseException | None = None
            self.memory: bytearray | None = None  # the engine, where the folder could not take it

        def write(self, data: Any) -> int:
            if self.failed is not None:
                return 0
            try:
                piece = data if isinstance(data, bytes) else bytes(data)  # the bindings' own copy, else one
                if self.memory is None:
                    self._to_file(piece)
                if self.memory is not None:
                    self.memory += piece
            except (OSError, MemoryError, KeyboardInterrupt) as exc:  # raised here it would cross TensorRT's C++ frames
                self.failed = exc
                return 0
            self.size += len(piece)
            return len(piece)

        def _to_file(self, piece: bytes) -> None:
            if self.fd is None:
                try:
                    self.fd, self.path = store.new_temp(SUFFIX)
                except OSError:  # the folder takes no file: the engine goes on in memory
                    self.memory = bytearray()
                    return
                self.queued = QueuedWrites(self.fd, ahead=AHEAD, hasher=self.sha256)
            assert self.queued is not None
            self.queued.put(piece)

        def _to_memory(self, queued: QueuedWrites) -> None:
            """Go on in memory: what the file took read back, the pieces it refused after it, the
            file removed."""
            assert self.fd is not None
            memory = bytearray()
            os.lseek(self.fd, 0, os.SEEK_SET)
            while len(memory) < queued.written:
                piece = os.read(self.fd, min(queued.written - len(memory), 1 << 24))
                if not piece:
                    raise OSError(f"{self.path} holds {len(memory)} of the {queued.written} bytes written")
                memory += piece
            for piece in queued.unwritten:
                memory += piece
            self.memory = memory
            self.remove()

        def close(self) -> None:
            """Wait until every piece is written (or, where the disk refused one, go on in memory:
            an OSError reading back is kept on `.failed`), then close the file. Interrupted while
            its thread still writes, the file stays open for `remove()`."""
            queued = self.queued
            if queued is not None:
                try:
                    queued.finish()
                except (OSError, MemoryError, KeyboardInterrupt) as exc:
                    self.failed = self.failed or exc
                    if not queued.done:
                        return
                self.queued = None
                if queued.refused is not None and self.failed is None:
                    try:
                        self._to_memory(queued)
                    except (OSError, MemoryError, KeyboardInterrupt) as exc:
                        self.failed = exc
            if self.fd is not None:
                fd, self.fd = self.fd, None
                os.close(fd)

        def remove(self) -> None:
            queued, self.queued = self.queued, None
            if queued is not None:
                queued.finish()  # its thread writes no more to the file
            self.close()
            if self.path is not None:
                _unlink(self.path)
                self.path = None

    return Writer()


__all__ = ["TMP_PREFIX", "SUFFIX", "EngineFile", "loose_engines", "serialize_engine"]
