"""A build streams its engine into a temp file (never whole in memory), which the build cache
moves into place: the engine hv.measure reads back is that file, its digest checked. No temp
file is left: not by a build the cache does not keep, nor by one that fails or is interrupted."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import tempfile
import threading

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.building.engine_store import EngineStore, stored_engine
from hierviz.capturing.example_inputs import example_from_graph
from hierviz.errors import BuildInterrupted
from hierviz.foundation import temp_files, writes_behind
from hierviz.foundation.digests import data_digest, file_digest
from hierviz.latency.compiling.lift import bake, lift
from hierviz.trt import engine_file
from tests.building.failing_converters import RefusesToBuild
from tests.building.models import ConvNet, made

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")


def _subgraph(cls: type = ConvNet, *shape: int) -> tuple[hv.Partition, torch.fx.GraphModule]:
    part = hv.partition(*made(cls, *(shape or (1, 3, 16, 16))), min_block_size=1)
    return part, getattr(part.module, part.subgraphs[0].tag)


@pytest.fixture
def system_tmp(tmp_path, monkeypatch):
    """The system's temp folder, one of the test's own."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_the_engine_is_written_into_the_folder_given_and_the_store_moves_it_into_place(tmp_path) -> None:
    store = EngineStore(tmp_path)
    _, gm = _subgraph()
    built = trt.convert_and_build(gm, engine_folder=store.folder)
    assert built.stage == "built" and built.engine is None and built.engine_file is not None
    written = built.engine_file.path
    assert written.parent == store.folder and written.name.startswith(temp_files.prefix())
    engine = written.read_bytes()
    assert len(engine) == built.engine_bytes == built.engine_file.size > 1000
    assert data_digest(engine) == built.engine_file.digest

    assert store.save("k", built) is None
    assert sorted(os.listdir(store.folder)) == ["k.engine", "k.json", "k.runtime"]  # moved: no temp file left
    assert not built.engine_file.kept
    record = json.loads((store.folder / "k.json").read_text())
    assert record["files"][".engine"] == [len(engine), data_digest(engine)]
    assert store.load("k").engine_bytes == len(engine)
    assert store.engine("k") == engine  # read back with its digest checked


def test_part_build_keeps_the_engine_hv_measure_reads_back(tmp_path, monkeypatch, system_tmp) -> None:
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    part, gm = _subgraph()
    builds = part.build()
    measured = bake(lift(gm, torch.device("cpu"), keep_meta=True), example_from_graph(gm))
    found = stored_engine(measured, trt.conversion_settings(None))
    assert found is not None and len(found[0]) == builds.df.engine_bytes[0]
    assert [p.name for p in (tmp_path / "builds").iterdir() if p.name.startswith(".")] == []
    assert list(system_tmp.iterdir()) == []


def test_a_build_the_cache_does_not_keep_leaves_no_file(tmp_path, monkeypatch, system_tmp) -> None:
    monkeypatch.setenv("HIERVIZ_CACHE", "0")
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    builds = _subgraph()[0].build()
    assert builds.ok and builds.df.engine_bytes[0] > 1000
    assert list(system_tmp.iterdir()) == [] and not (tmp_path / "cache").exists()


def test_an_engine_file_not_moved_is_deleted_once_the_build_is_dropped(system_tmp) -> None:
    built = trt.convert_and_build(_subgraph()[1])  # no folder: the system's temp folder
    assert built.engine_file is not None and built.engine_file.path.parent == system_tmp
    assert len(list(system_tmp.iterdir())) == 1
    del built
    assert list(system_tmp.iterdir()) == []


def test_an_engine_too_big_for_the_cache_is_not_kept_nor_left(tmp_path) -> None:
    store = EngineStore(tmp_path, max_bytes=1000)
    _, gm = _subgraph()
    built = trt.convert_and_build(gm, engine_folder=store.folder)
    said = store.save("k", built, label="_run_on_acc_tensorrt_0")
    assert said is not None and said.startswith("_run_on_acc_tensorrt_0's engine (")
    assert os.listdir(store.folder) == [] and not built.engine_file.kept


def test_a_build_that_fails_leaves_no_file(tmp_path) -> None:
    _, gm = _subgraph(RefusesToBuild, 2, 8)  # the test's converter adds an assertion the builder refuses
    built = trt.convert_and_build(gm, engine_folder=tmp_path)
    assert built.stage == "build" and built.engine_file is None and built.engine_bytes is None
    assert os.listdir(tmp_path) == []


class _Unwritable:
    """What the engine is written to: a file opened read-only, so that writing it fails."""

    def __init__(self, path: str) -> None:
        self.path = path

    def mkstemp(self, dir: str, prefix: str, suffix: str) -> tuple[int, str]:
        path = os.path.join(dir, f"{prefix}made{suffix}")
        return os.open(path, os.O_RDONLY | os.O_CREAT), path


def test_an_engine_that_cannot_be_written_is_built_in_memory_and_leaves_no_file(tmp_path, monkeypatch) -> None:
    _, gm = _subgraph()
    monkeypatch.setattr(engine_file.tempfile, "mkstemp", _Unwritable(str(tmp_path)).mkstemp)
    built = trt.convert_and_build(gm, engine_folder=tmp_path)
    assert built.stage == "built" and built.engine_file is None
    assert len(built.engine) == built.engine_bytes > 1000
    assert os.listdir(tmp_path) == []


def test_a_disk_that_fills_while_the_engine_is_written_gives_the_whole_engine_in_memory(tmp_path, monkeypatch):
    """The disk takes 1000 bytes, part of a piece: what the file took of whole pieces is read
    back and the rest kept in memory; the engine is the bytes TensorRT wrote, in order, and no
    file is left."""
    _, gm = _subgraph()
    pieces: list[bytes] = []
    written, left = temp_files.write_all, [1000]

    def fills(fd, data):
        pieces.append(bytes(memoryview(data).cast("B")))
        taken = pieces[-1][:left[0]]
        written(fd, taken)
        left[0] -= len(taken)
        if len(taken) < len(pieces[-1]):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(temp_files, "write_all", fills)
    built = trt.convert_and_build(gm, engine_folder=tmp_path)
    assert built.stage == "built" and built.engine_file is None and pieces
    assert bytes(built.engine) == b"".join(pieces) and built.engine_bytes == len(b"".join(pieces)) > 1000
    assert os.listdir(tmp_path) == []


class _Interrupted:
    """A digest interrupted (Ctrl-C) while the engine is written."""

    def update(self, data: bytes) -> None:
        raise KeyboardInterrupt


def test_an_interrupt_while_the_engine_is_written_leaves_no_file(tmp_path, monkeypatch) -> None:
    _, gm = _subgraph()
    monkeypatch.setattr(engine_file, "data_hasher", _Interrupted)
    with pytest.raises(BuildInterrupted, match=r"^part.build\(\): interrupted while TensorRT built the subgraph"):
        trt.convert_and_build(gm, engine_folder=tmp_path)
    assert os.listdir(tmp_path) == []


class _CountingHasher:
    """SHA-256, counting the pieces and bytes hashed; `second` is set once a second piece is."""

    pieces: list[int] = []
    second = threading.Event()
    last: "_CountingHasher"

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        type(self).last = self

    def update(self, data: bytes) -> None:
        self._sha.update(data)
        self.pieces.append(len(data))
        if len(self.pieces) >= 2:
            self.second.set()

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


@pytest.fixture
def counting_hasher(monkeypatch):
    monkeypatch.setattr(_CountingHasher, "pieces", [])
    monkeypatch.setattr(_CountingHasher, "second", threading.Event())
    monkeypatch.setattr(engine_file, "data_hasher", _CountingHasher)
    return _CountingHasher


class _Wide(torch.nn.Module):
    """One linear layer of 67 MB of weights: TensorRT hands its engine over in 64 MiB pieces."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4100, 4100)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def test_the_builder_goes_on_while_the_disk_takes_the_engine(tmp_path, monkeypatch, counting_hasher) -> None:
    """A piece still being written does not hold TensorRT's builder up: it hands over its next
    piece meanwhile (hashed on the writer's thread). The file is then whole, its digest and size
    the record's."""
    from hierviz.foundation.queued_writes import QueuedWrites

    part = hv.partition(_Wide().eval(), (torch.randn(2, 4100),), min_block_size=1)
    written, waited, handed, second = temp_files.write_all, [], [], threading.Event()
    real_put = QueuedWrites.put

    def put(self, piece):
        real_put(self, piece)
        handed.append(len(piece))
        if len(handed) >= 2:
            second.set()

    def slow_disk(fd, data):
        if not waited:  # the first piece is written only once the builder has handed over the second
            waited.append(second.wait(30))
        written(fd, data)

    monkeypatch.setattr(QueuedWrites, "put", put)
    monkeypatch.setattr(temp_files, "write_all", slow_disk)
    built = trt.convert_and_build(getattr(part.module, part.subgraphs[0].tag), engine_folder=tmp_path)
    assert waited == [True] and len(counting_hasher.pieces) > 1 and counting_hasher.pieces == handed
    assert built.stage == "built" and built.engine_file is not None
    assert built.engine_file.size == built.engine_file.path.stat().st_size == sum(counting_hasher.pieces) > 1000
    assert built.engine_file.digest == file_digest(built.engine_file.path)


def test_a_first_build_hashes_its_engine_once_and_never_reads_it_back(tmp_path, monkeypatch, counting_hasher):
    """The engine is hashed as it is written (each byte once), and part.build() neither reads
    the file back nor hashes it again: the digest checked on read is the one taken then."""
    from hierviz.foundation import disk_store

    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    again: list[str] = []
    hashed: list[int] = []  # the bytes of each digest the store took
    real_data, real_file = disk_store.data_digest, disk_store.file_digest
    monkeypatch.setattr(disk_store, "data_digest", lambda data: hashed.append(len(data)) or real_data(data))
    monkeypatch.setattr(disk_store, "file_digest", lambda path: hashed.append(os.path.getsize(path)) or real_file(path))
    for method in ("read", "checked_path"):
        real_read = getattr(disk_store.DiskStore, method)
        monkeypatch.setattr(disk_store.DiskStore, method, lambda self, name, suffix, real_read=real_read:
                            again.append(suffix) or real_read(self, name, suffix))
    builds = _subgraph()[0].build()
    writes_behind.wait_all()  # the engine is put in place after build() returned
    (engine,) = (tmp_path / "builds").glob("*.engine")
    assert builds.ok and sum(counting_hasher.pieces) == engine.stat().st_size == builds.df.engine_bytes[0]
    assert ".engine" not in again  # never read back (the capture's own entry is)
    # hashed: only the capture's and the runtime record's few bytes
    assert engine.stat().st_size not in hashed and sum(hashed) < engine.stat().st_size / 4


def test_a_disk_that_fills_while_later_pieces_wait_gives_the_whole_engine_in_memory(tmp_path, monkeypatch,
                                                                                  counting_hasher) -> None:
    """The disk refuses the second of several pieces: the first is read back, the refused one and
    every piece after it are kept, in order: the engine is every byte TensorRT handed over."""
    part = hv.partition(_Wide().eval(), (torch.randn(2, 4100),), min_block_size=1)
    written, calls = temp_files.write_all, []

    def fills(fd, data):
        calls.append(len(data))
        if len(calls) > 1:
            written(fd, memoryview(data)[:1000])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written(fd, data)

    monkeypatch.setattr(temp_files, "write_all", fills)
    built = trt.convert_and_build(getattr(part.module, part.subgraphs[0].tag), engine_folder=tmp_path)
    assert built.stage == "built" and built.engine_file is None and len(counting_hasher.pieces) > 2
    assert len(calls) == 2  # nothing more is offered to a disk that refused
    assert len(built.engine) == built.engine_bytes == sum(counting_hasher.pieces)
    assert data_digest(built.engine) == counting_hasher.last.hexdigest()
    assert os.listdir(tmp_path) == []
