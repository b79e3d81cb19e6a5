"""A first part.build() returns once TensorRT has handed its engine over; the build cache's entry
is finished behind it (hierviz.foundation.writes_behind): whole or absent to every reader, waited
for by this process's next build and by the interpreter's exit, and what it could not keep is one
CacheWarning, never an exception."""

from __future__ import annotations

import errno
import json
import os
import threading
import warnings

import pytest

import hierviz as hv
from hierviz import trt
from hierviz.building.engine_store import EngineStore
from hierviz.foundation import temp_files
from hierviz.foundation.cache_warning import CacheWarning
from tests.building.models import ConvNet, made

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")

WRITER = "hierviz-file-writer"  # the thread that writes an engine's pieces (hierviz.foundation.queued_writes)


def _entries(folder) -> list[str]:
    """The build entries' files in the build cache's folder (graph runs and temp files aside)."""
    return sorted(p.name for p in (folder / "builds").iterdir()
                  if not p.name.startswith(("run-", ".")))


@pytest.fixture
def slow_disk(monkeypatch):
    """A disk that takes no piece of an engine until the test sets the event it returns (at most
    10 s: then it takes it anyway); `.waited` says each wait's end (True: the test released it)."""
    released = threading.Event()
    released.waited = []  # type: ignore[attr-defined]
    real = temp_files.write_all

    def write_all(fd, data):
        if threading.current_thread().name == WRITER:
            released.waited.append(released.wait(10))  # type: ignore[attr-defined]
        real(fd, data)

    monkeypatch.setattr(temp_files, "write_all", write_all)
    return released


def test_build_returns_before_the_engine_is_on_disk_and_the_next_build_reads_it_whole(tmp_path, monkeypatch,
                                                                                    slow_disk):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    first = part.build()
    assert first.ok and list(first.df["cached"]) == [False]
    assert slow_disk.waited == []  # returned while the disk had not taken a piece
    assert _entries(tmp_path) == []  # no half entry: nothing of it is in place yet
    slow_disk.set()
    again = part.build()  # waits for the write, then reads the entry, checked
    assert list(again.df["cached"]) == [True] and again.engine_bytes == first.engine_bytes
    assert slow_disk.waited and all(slow_disk.waited)
    (engine,) = [n for n in _entries(tmp_path) if n.endswith(".engine")]
    assert (tmp_path / "builds" / engine).stat().st_size == first.engine_bytes


CHILD = """
import json, sys, threading, time
import hierviz as hv
from hierviz.foundation import temp_files
from tests.building.models import ConvNet, made
part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
real = temp_files.write_all
def write_all(fd, data):  # a slow disk: each piece of the engine takes a second
    if threading.current_thread().name == "hierviz-file-writer":
        time.sleep(1.0)
    real(fd, data)
temp_files.write_all = write_all
builds = part.build()
folder = sys.argv[-1]
import pathlib
kept = [p.name for p in pathlib.Path(folder, "builds").glob("*.json") if not p.name.startswith("run-")]
print(json.dumps({"ok": builds.ok, "bytes": builds.engine_bytes, "kept_at_return": kept}), flush=True)
"""


def test_a_process_that_ends_right_after_build_leaves_its_entry_whole(tmp_path, run_python):
    """The script ends while the engine is still being written: the exit waits for the write, and
    the entry is then whole for another process (read back, length and digest checked)."""
    done = run_python(CHILD.replace("sys.argv[-1]", repr(str(tmp_path))), env={"HIERVIZ_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["ok"] and said["kept_at_return"] == []  # build() returned before the entry was in place
    store = EngineStore(tmp_path)
    (record,) = store.builds()
    key = record.name.split(".")[0]
    found = store.load(key)  # the engine's length and SHA-256 checked against the record
    assert found is not None and found.stage == "built" and found.engine_bytes == said["bytes"]
    assert len(store.engine(key) or b"") == said["bytes"]
    assert [p.name for p in store.folder.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_a_disk_that_fills_after_build_returned_is_one_cache_warning_and_keeps_nothing(tmp_path, monkeypatch,
                                                                                     slow_disk):
    """The engine is refused once build() has returned (two engines, the disk full by then): one
    CacheWarning says why, once for both; no exception reaches the user; nothing is left."""
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    model, x = made(ConvNet, 1, 3, 8, 8)
    part = hv.partition(model, x, min_block_size=1, torch_executed_ops={"aten.relu.default"})
    assert part.stats["subgraphs_by_backend"]["tensorrt"] == 2
    slow = temp_files.write_all

    def full(fd, data):
        slow(fd, data)  # an engine's piece waits until released: by then the disk is full
        if slow_disk.is_set():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(temp_files, "write_all", lambda fd, data: full(fd, data))
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")
        builds = part.build()
        assert builds.ok and list(builds.df["stage"]) == ["built", "built"] and slow_disk.waited == []
        slow_disk.set()
        store = EngineStore(tmp_path)
        assert store.builds() == []  # once the writes behind the build are done: nothing kept
    said = [str(w.message) for w in heard if issubclass(w.category, CacheWarning)]
    assert said == [f"part.build(): _run_on_acc_tensorrt_0's engine was not kept in the build cache: the disk of "
                    f"{store.folder} is full (No space left on device); free space there or set HIERVIZ_CACHE_DIR to "
                    "a folder on another disk"]
    assert _entries(tmp_path) == [] and [p for p in store.folder.iterdir() if p.name.startswith(".")] == []


def test_a_process_killed_while_its_engine_is_written_leaves_no_half_entry(tmp_path):
    """`kill -9` after build() returned, while the disk still takes the engine: no entry at all
    (no record, no engine in place), so the next build builds it again."""
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = CHILD.replace("time.sleep(1.0)", "time.sleep(60)").replace("sys.argv[-1]", repr(str(tmp_path)))
    env = {**os.environ, "HIERVIZ_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        said = json.loads(child.stdout.readline())  # build() returned; the engine's first piece waits for the disk
        assert said["ok"] and said["kept_at_return"] == []
        child.send_signal(signal.SIGKILL)
        assert child.wait(30) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()
    assert EngineStore(tmp_path).builds() == [] and _entries(tmp_path) == []


def test_build_returns_before_the_engine_is_hashed_and_the_digest_kept_is_the_engines(tmp_path, monkeypatch):
    """The engine's SHA-256 is taken on the writer's thread, not in TensorRT's hand-over: build()
    returns before a byte is hashed, and the record's digest is the engine's (checked on read)."""
    import hashlib

    from hierviz.trt import engine_file

    released, waited = threading.Event(), []

    class SlowHasher:
        def __init__(self) -> None:
            self._sha = hashlib.sha256()

        def update(self, data) -> None:
            waited.append(released.wait(10))
            self._sha.update(data)

        def hexdigest(self) -> str:
            return self._sha.hexdigest()

    monkeypatch.setattr(engine_file, "data_hasher", SlowHasher)
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    first = part.build()
    assert first.ok and waited == []
    released.set()
    store = EngineStore(tmp_path)
    (record,) = store.builds()
    key = record.name.split(".")[0]
    engine = store.engine(key)  # read back, its length and SHA-256 checked against the record
    assert engine is not None and len(engine) == first.engine_bytes and waited and all(waited)
    assert list(part.build().df["cached"]) == [True]


def test_a_warning_of_another_thread_while_an_engine_builds_reaches_the_user_not_the_notes(tmp_path, monkeypatch):
    """A write finished behind one build can warn while the next engine converts: that warning is
    the user's to see, never recorded as Torch-TensorRT's (Builds.notes' "Torch-TensorRT warned")."""
    from hierviz.trt import engine_builder

    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    real = engine_builder.serialize_engine

    def serialize(*args, **kwargs):
        other = threading.Thread(target=lambda: warnings.warn("hvtest: a write behind failed", CacheWarning,
                                                              stacklevel=1))
        other.start()
        other.join()
        return real(*args, **kwargs)

    monkeypatch.setattr(engine_builder, "serialize_engine", serialize)
    part = hv.partition(*made(ConvNet, 1, 3, 16, 16), min_block_size=1)
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")
        builds = part.build()
    assert builds.ok and not [n for n in builds.notes if "hvtest" in n]
    assert [str(w.message) for w in heard if issubclass(w.category, CacheWarning)] == ["hvtest: a write behind failed"]
