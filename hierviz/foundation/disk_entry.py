"""What a disk store keeps and lists (hierviz.foundation.disk_store): an entry's files together
(`DiskEntry`), the length and SHA-256 its record keeps of each file (`StoredFile`), and a file
written elsewhere already, with those known, that the store moves into place (`WrittenFile`:
an engine TensorRT streamed into a temp file, hierviz.trt.engine_file.EngineFile)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Protocol


class DiskEntry(NamedTuple):
    """An entry: its name, the bytes of all its files, when it was last used (its newest file's
    time) and its files."""

    name: str
    bytes: int
    used: float
    files: list[Path]


class StoredFile(NamedTuple):
    """The length and SHA-256 (hierviz.foundation.digests.data_digest) of one file of an entry."""

    size: int
    digest: str


class WrittenFile(Protocol):
    """A file written already (its length and digest taken as it was written), moved into place."""

    size: int
    digest: str

    def move_to(self, destination: Path) -> None: ...


__all__ = ["DiskEntry", "StoredFile", "WrittenFile"]
