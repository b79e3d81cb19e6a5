"""The build cache on disk: its size bound (from the disk's free space), what it keeps and evicts,
a disk that takes no engine (one note, nothing kept), temp files (a killed writer's removed, a
running writer's left), and entries checked when read (a damaged engine is built again, never
handed to hv.measure nor counted as built)."""

from __future__ import annotations

import errno
import os
import shutil
import time
import types
import warnings

import pytest
import torch

from hierviz.building.build_keys import build_key
from hierviz.building.engine_store import EngineStore, stored_engine
from hierviz.capturing import disk_cache
from hierviz.foundation import cache_folder, temp_files
from hierviz.foundation.disk_store import DiskStore
from hierviz.trt.engine_builder import EngineBuild
from tests.disk_helpers import OLD, left_temp

GiB = 1024**3


def _free_space(monkeypatch, free: int) -> list[str]:
    """Make the disk report `free` bytes; the paths it was asked about."""
    asked: list[str] = []

    def usage(path):
        asked.append(str(path))
        return types.SimpleNamespace(total=free * 2, used=free, free=free)

    monkeypatch.setattr(shutil, "disk_usage", usage)
    return asked


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HIERVIZ_CACHE_LIMIT", raising=False)
    return tmp_path / "cache"


def test_the_limit_is_a_quarter_of_the_free_space(cache_dir, monkeypatch):
    asked = _free_space(monkeypatch, 40 * GiB)
    assert disk_cache.limit() == 10 * GiB  # a 2.2 GB engine fits, with room for others
    assert asked and str(cache_dir).startswith(asked[-1])  # the cache folder's disk (its first existing parent)


def test_the_limit_is_at_least_2_gib_and_at_most_20(cache_dir, monkeypatch):
    _free_space(monkeypatch, 3 * GiB)
    assert disk_cache.limit() == 2 * GiB == disk_cache.DEFAULT_LIMIT
    _free_space(monkeypatch, 500 * GiB)
    assert disk_cache.limit() == 20 * GiB


def test_below_2_gib_free_the_limit_is_the_free_space(cache_dir, monkeypatch):
    _free_space(monkeypatch, 300 * 10**6)
    assert disk_cache.limit() == 300 * 10**6
    store = EngineStore(max_bytes=None)
    why = store.save("big", _build(b"x" * (400 * 10**6 // 1000) * 1000, input_binding_names=["x"]), label="g0")
    assert why == (f"g0's engine (0.4 GB) was not kept in the build cache: the disk of {store.folder} has 0.3 GB free, "
                   "the cache limit there; free space there or set HIERVIZ_CACHE_DIR to a folder on a larger disk")
    assert store.notes == [why] and not store.folder.exists()
    store.save("bigger", _build(b"x" * (500 * 10**6 // 1000) * 1000, input_binding_names=["x"]), label="g1")
    assert store.notes == [why.replace("g0's engine (0.4 GB) was", "g0's engine (0.4 GB) and 1 other engine were")]


def _said(call) -> tuple[object, list[str]]:
    """What `call()` gives, and the CacheWarnings it issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = call()
    return value, [str(w.message) for w in caught if issubclass(w.category, disk_cache.CacheWarning)]


@pytest.mark.parametrize("text, size", [("12345", 12345), ("10GB", 10 * 10**9), ("10 GiB", 10 * GiB),
                                        ("1.5gib", int(1.5 * GiB)), ("500M", 500 * 10**6), ("64kB", 64000),
                                        ("7 b", 7), ("0", 0)])
def test_the_environment_sets_the_limit_in_bytes_or_with_a_unit(cache_dir, monkeypatch, text, size):
    _free_space(monkeypatch, 40 * GiB)
    monkeypatch.setenv("HIERVIZ_CACHE_LIMIT", text)
    assert _said(disk_cache.limit) == (size, [])


def test_a_limit_that_is_not_a_size_is_said_once_and_the_disk_decides(cache_dir, monkeypatch):
    _free_space(monkeypatch, 40 * GiB)
    monkeypatch.setattr("hierviz.foundation.cache_limit._SAID", set())
    for unreadable in ("lots", "-5", "1.5e9", "10 GB of it"):
        monkeypatch.setenv("HIERVIZ_CACHE_LIMIT", unreadable)
        assert _said(disk_cache.limit) == (10 * GiB, [
            f"HIERVIZ_CACHE_LIMIT={unreadable!r} is not a size, so it is not used: give bytes (2000000000) or a "
            "number with a unit (10GB, 1.5GiB, 500MB); the cache limit follows the disk's free space meanwhile"])
        assert _said(disk_cache.limit) == (10 * GiB, [])  # once
    monkeypatch.setenv("HIERVIZ_CACHE_LIMIT", "  ")
    assert _said(disk_cache.limit) == (10 * GiB, [])  # empty: not set


def test_an_unreadable_disk_gives_the_default(cache_dir, monkeypatch):
    def fails(path):
        raise OSError("no such device")

    monkeypatch.setattr(shutil, "disk_usage", fails)
    assert disk_cache.limit() == disk_cache.DEFAULT_LIMIT


# ---------------------------------------------------------------------------- what is kept and evicted
def _build(engine: bytes = b"x" * 100, **runtime) -> EngineBuild:
    return EngineBuild("built", 3, 0.1, 0.2, engine=engine, runtime=runtime or {"input_binding_names": ["x"]})


def _files(store: EngineStore) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in store.folder.iterdir()}


def _entry_bytes(store: EngineStore, key: str) -> int:
    return sum(size for name, size in _files(store).items() if name.split(".")[0] == key)


def _age(store: EngineStore, key: str, seconds_ago: float) -> None:
    """Make `key`'s files last used `seconds_ago` (file times are too coarse to order saves made
    within a few milliseconds)."""
    when = time.time() - seconds_ago
    for path in store.folder.glob(f"{key}.*"):
        os.utime(path, (when, when))


def _kept(store: EngineStore) -> set[str]:
    return {name for name, _, _, _ in store.entries()}


def test_an_entry_larger_than_the_limit_is_not_kept_and_evicts_nothing(tmp_path):
    store = EngineStore(tmp_path, max_bytes=10**6)
    assert store.save("small", _build()) is None
    before = _files(store)
    store.store.max_bytes = 2000
    why = store.save("big", _build(b"x" * 3000), label="_run_on_acc_tensorrt_0")
    assert why is not None and store.notes == [why]
    assert why.startswith("_run_on_acc_tensorrt_0's engine (")
    assert why.endswith("is larger than the cache limit (2000 bytes); set HIERVIZ_CACHE_LIMIT=<size> to keep it "
                        "(e.g. HIERVIZ_CACHE_LIMIT=1GiB)")
    assert _files(store) == before  # nothing written, nothing evicted
    assert store.load("big") is None and store.load("small") is not None


def test_the_bound_is_the_disk_store_s_own(tmp_path):
    """EngineStore obeys its DiskStore's bound as DiskStore reads it: None is unbounded (it was
    read as 0 bytes, and every engine was refused)."""
    store = EngineStore(tmp_path, max_bytes=10**6)
    store.store.max_bytes = None
    assert store.save("big", _build(b"x" * 3000)) is None and store.notes == []
    assert store.load("big") is not None


def test_a_2_gb_engine_fits_the_default_limit_where_the_disk_has_room(tmp_path, monkeypatch):
    monkeypatch.delenv("HIERVIZ_CACHE_LIMIT", raising=False)
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    _free_space(monkeypatch, 40 * GiB)
    assert EngineStore().store.max_bytes >= 4 * 2.2e9  # the 1.1B model's engine, and room for three more


def test_least_recently_used_entries_go_first_all_their_files_together(tmp_path):
    store = EngineStore(tmp_path, max_bytes=10**6)
    for key in ("a", "b", "c"):
        assert store.save(key, _build()) is None
    store.save_run("r", None)
    for ago, key in ((40, "a"), (30, "b"), (20, "run-r"), (10, "c")):
        _age(store, key, ago)
    one = _entry_bytes(store, "a")
    assert {_entry_bytes(store, k) for k in "abc"} == {one}  # record, engine and runtime record each
    assert sorted(_files(store)) == ["a.engine", "a.json", "a.runtime", "b.engine", "b.json", "b.runtime",
                                     "c.engine", "c.json", "c.runtime", "run-r.json"]

    store.load("a")  # used now: the newest
    store.store.max_bytes = 3 * one + 10  # d needs b's and the run's room
    assert store.save("d", _build()) is None
    assert _kept(store) == {"a", "c", "d"}
    assert sorted(_files(store)) == ["a.engine", "a.json", "a.runtime", "c.engine", "c.json", "c.runtime",
                                     "d.engine", "d.json", "d.runtime"]
    assert store.size() == sum(_files(store).values()) <= store.store.max_bytes


def test_the_entry_just_written_is_not_evicted_by_its_own_save(tmp_path, monkeypatch):
    store = EngineStore(tmp_path, max_bytes=10**6)
    store.save("old", _build())
    store.store.max_bytes = _entry_bytes(store, "old") + 10  # room for one entry
    made = DiskStore._temp_with

    def skewed(folder, suffix, data):  # a file server whose clock is an hour behind: the new files look oldest
        path = made(folder, suffix, data)
        when = time.time() - 3600
        os.utime(path, (when, when))
        return path

    monkeypatch.setattr(DiskStore, "_temp_with", staticmethod(skewed))
    assert store.save("new", _build()) is None
    assert _kept(store) == {"new"}
    assert store.load("new") is not None and store.engine("new") == b"x" * 100


# ---------------------------------------------------------------------------- checked on read
def _kept_one(tmp_path) -> EngineStore:
    store = EngineStore(tmp_path, max_bytes=10**6)
    assert store.save("k", _build(bytes(range(100)), input_binding_names=["x"])) is None
    return store


def _damaged(call) -> tuple[object, list[str]]:
    """What `call()` gives, and the CacheWarnings it issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = call()
    return value, [str(w.message) for w in caught if issubclass(w.category, disk_cache.CacheWarning)]


def test_a_truncated_engine_is_stale_removed_and_built_again(tmp_path):
    store = _kept_one(tmp_path)
    engine = store.folder / "k.engine"
    engine.write_bytes(engine.read_bytes()[:10])
    found, said = _damaged(lambda: store.load("k"))
    assert found is None
    assert len(said) == 1 and "k.*" in said[0] and "its engine file is 10 bytes, the record says 100" in said[0]
    assert "will be built again" in said[0]
    assert _files(store) == {}  # removed: the next build replaces it
    again, said = _damaged(lambda: store.load("k"))
    assert again is None and said == []  # said once
    assert store.save("k", _build(bytes(range(100)))) is None and store.engine("k") == bytes(range(100))


def test_a_damaged_runtime_record_is_stale(tmp_path):
    store = _kept_one(tmp_path)
    runtime = store.folder / "k.runtime"
    runtime.write_bytes(runtime.read_bytes()[:-3])
    found, said = _damaged(lambda: store.load("k"))
    assert found is None and len(said) == 1 and "runtime file is" in said[0]
    assert _files(store) == {}

    store = _kept_one(tmp_path)
    data = bytearray(runtime.read_bytes())
    data[-2] ^= 0xFF  # the same length, other bytes
    runtime.write_bytes(bytes(data))
    found, said = _damaged(lambda: store.load("k"))
    assert found is None and len(said) == 1 and "runtime file's digest disagrees" in said[0]


def _flip_a_byte(path) -> None:
    data = bytearray(path.read_bytes())
    data[50] ^= 1
    path.write_bytes(bytes(data))


def test_an_engine_with_a_flipped_byte_never_reaches_hv_measure(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HIERVIZ_CACHE", "1")
    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    store = EngineStore(max_bytes=10**6)
    key = build_key(gm, None)
    assert store.save(key, _build(bytes(range(100)), input_binding_names=["x"])) is None
    assert stored_engine(gm, None) == (bytes(range(100)), {"input_binding_names": ["x"]})
    engine = store.folder / f"{key}.engine"
    _flip_a_byte(engine)
    found, said = _damaged(lambda: stored_engine(gm, None))
    assert found is None
    assert len(said) == 1 and "its engine file's digest disagrees with the record" in said[0]
    assert not engine.exists()


def test_a_cached_build_whose_engine_has_a_flipped_byte_is_not_served_on_any_machine(tmp_path):
    """load() is what part.build() reads (no GPU, nothing deserialized): the same length is not
    enough, the digest is checked; the entry is removed with a warning and a note naming it."""
    store = _kept_one(tmp_path)
    _flip_a_byte(store.folder / "k.engine")
    found, said = _damaged(lambda: store.load("k", label="_run_on_acc_tensorrt_0"))
    assert found is None
    assert len(said) == 1 and "its engine file's digest disagrees with the record" in said[0]
    assert store.notes == ["_run_on_acc_tensorrt_0's cached build was damaged (its engine file's digest disagrees "
                           "with the record): it was removed and built again"]
    assert _files(store) == {}


def _temp(store: EngineStore, pid: int, age_s: float):
    return left_temp(store.folder, f"{temp_files.prefix(pid)}abcd.engine", age_s, b"part of an engine")




def test_a_killed_writers_temp_files_are_removed_a_running_writers_left(tmp_path, writers):
    killed, writing = writers
    store = _kept_one(tmp_path)
    old, busy, fresh = _temp(store, killed, OLD), _temp(store, writing, OLD), store.folder / ".tmp-writing"
    fresh.write_bytes(b"an engine being written")  # an older hierviz's name: by its age alone
    EngineStore(tmp_path)  # opened
    assert not old.exists() and busy.exists() and fresh.exists()
    old = _temp(store, killed, OLD)
    store.save("other", _build())  # pruned
    assert not old.exists() and busy.exists() and fresh.exists()
    assert "other" in _kept(store) and "k" in _kept(store)


def test_clear_leaves_the_temp_file_another_process_is_writing(tmp_path, writers):
    """What another process's build is writing stays: its build keeps its engine."""
    killed, writing = writers
    store = _kept_one(tmp_path)
    busy, old = _temp(store, writing, 5.0), _temp(store, killed, OLD)
    assert store.temp_survey() == temp_files.Survey(2, 2 * 17, 1)
    assert store.clear() == 1
    assert sorted(_files(store)) == [busy.name] and not old.exists()
    os.replace(busy, store.folder / "k2.engine")  # the other build moves its engine into place: it was there
    assert (store.folder / "k2.engine").read_bytes() == b"part of an engine"


def _full_disk(monkeypatch) -> None:
    def write_all(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(temp_files, "write_all", write_all)


def test_a_full_disk_keeps_nothing_and_says_so_once(tmp_path, monkeypatch):
    store = EngineStore(tmp_path, max_bytes=10**6)
    _full_disk(monkeypatch)
    first = store.save("a", _build(), label="_run_on_acc_tensorrt_0")
    assert first == (f"_run_on_acc_tensorrt_0's engine was not kept in the build cache: the disk of {store.folder} is "
                     "full (No space left on device); free space there or set HIERVIZ_CACHE_DIR to a folder on "
                     "another disk")
    assert store.notes == [first]
    store.save("b", _build(), label="_run_on_acc_tensorrt_1")
    store.save("c", _build(), label="_run_on_acc_tensorrt_2")
    assert store.notes == [first.replace("_run_on_acc_tensorrt_0's engine was", "_run_on_acc_tensorrt_0's engine "
                                         "and 2 other engines were")]
    assert _files(store) == {}
    assert store.load("a") is None


def test_a_folder_that_cannot_be_written_keeps_nothing_and_says_so_once(tmp_path, monkeypatch):
    store = EngineStore(tmp_path, max_bytes=10**6)

    def refused(folder, suffix=""):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))

    monkeypatch.setattr(temp_files, "make", refused)  # we run as root: chmod would not stop the writes
    store.save("a", _build(), label="g0")
    store.save("b", _build(), label="g1")
    assert store.notes == [f"g0's engine and 1 other engine were not kept in the build cache: {store.folder} cannot "
                           "be written (Permission denied)"]
    assert _files(store) == {}


def test_cache_info_says_the_limit_and_how_it_was_chosen(cache_dir, monkeypatch, capsys):
    from hierviz.cli.commands import main

    _free_space(monkeypatch, 40 * GiB)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"limit: 10.0 GiB ({10 * GiB} bytes) for each cache (a quarter of the free space on its disk, at least " \
           "2 GiB (or all of it, when less is free) and at most 20 GiB; HIERVIZ_CACHE_LIMIT=<size> sets it (10GB, " \
           "10GiB or bytes); 40.0 GiB free now)" in out
    monkeypatch.setenv("HIERVIZ_CACHE_LIMIT", "3GiB")
    assert main(["cache", "info"]) == 0
    assert f"limit: 3.0 GiB ({3 * GiB} bytes) for each cache (set by HIERVIZ_CACHE_LIMIT)" in capsys.readouterr().out


def test_cache_info_counts_temp_files_and_clear_removes_the_stale_ones(cache_dir, monkeypatch, capsys, writers):
    from hierviz.cli.commands import main

    killed, writing = writers
    store = EngineStore()
    store.folder.mkdir(parents=True)
    busy, old = _temp(store, writing, OLD), _temp(store, killed, OLD)
    assert main(["cache", "info"]) == 0
    assert ("temp files: 2 temp files (0.0 MiB), 1 of them left by runs that ended mid-write (removed by the next run "
            "or `hierviz cache clear`), the others being written now") in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "left 1 temp file(s) other processes are writing now" in capsys.readouterr().out
    assert busy.exists() and not old.exists()


def test_a_cache_folder_that_is_a_file_is_one_message(tmp_path, monkeypatch, capsys):
    from hierviz.cli.commands import main

    taken = tmp_path / "not-a-folder"
    taken.write_text("a file")
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(taken))
    monkeypatch.setattr(cache_folder, "_SAID", set())
    said = (f"hierviz's cache is off: HIERVIZ_CACHE_DIR={str(taken)!r} is a file, not a folder; set HIERVIZ_CACHE_DIR "
            "to a folder (or unset it for the default ~/.cache/hierviz)")
    assert _said(lambda: (disk_cache.enabled(), disk_cache.enabled())) == ((False, False), [said])
    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    assert _said(lambda: stored_engine(gm, None)) == (None, [])
    assert main(["cache", "info"]) == 1
    assert capsys.readouterr().err == f"hierviz cache info: {said}\n"
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(taken / "hierviz"))
    assert "HIERVIZ_CACHE_DIR=" + repr(str(taken / "hierviz")) + f" is inside {taken}, which is a file" in \
        disk_cache.folder_problem()


def test_a_failed_build_read_back_says_whether_its_error_line_was_cut(tmp_path):
    """The build cache keeps EngineBuild.error_cut: a cached failure is compared with another as
    the fresh one is (a cut line agrees as far as it goes)."""
    store = EngineStore(tmp_path, max_bytes=10**6)
    failed = EngineBuild("build", 3, 0.1, 0.2, exception="RuntimeError",
                         error="RuntimeError: layer (7) refused: the operand shapes…", error_cut=True)
    assert store.save("cut", failed) is None
    back = store.load("cut")
    assert back is not None and back.error_cut and back.error == failed.error
