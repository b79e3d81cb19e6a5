"""The build cache on disk: its size bound (from the disk's free space), what it keeps and evicts,
and entries checked when read (a damaged engine is built again, never handed to hv.measure)."""

from __future__ import annotations

import os
import shutil
import time
import types
import warnings

import pytest
import torch

from hierviz.building.build_keys import build_key
from hierviz.building.engine_store import STALE_TMP_S, EngineStore, stored_engine
from hierviz.capturing import disk_cache
from hierviz.trt.engine_builder import EngineBuild

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


def test_the_environment_overrides_the_limit(cache_dir, monkeypatch):
    _free_space(monkeypatch, 40 * GiB)
    monkeypatch.setenv("HIERVIZ_CACHE_LIMIT", "12345")
    assert disk_cache.limit() == 12345
    for unreadable in ("lots", "-5", "1.5e9", ""):
        monkeypatch.setenv("HIERVIZ_CACHE_LIMIT", unreadable)
        assert disk_cache.limit() == 10 * GiB


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
    store.max_bytes = 2000
    why = store.save("big", _build(b"x" * 3000), label="_run_on_acc_tensorrt_0")
    assert why is not None and store.notes == [why]
    assert why.startswith("_run_on_acc_tensorrt_0's engine (")
    assert "is larger than the cache limit (2000 bytes); set HIERVIZ_CACHE_LIMIT=<bytes> to keep it" in why
    assert _files(store) == before  # nothing written, nothing evicted
    assert store.load("big") is None and store.load("small") is not None


def test_a_2_gb_engine_fits_the_default_limit_where_the_disk_has_room(tmp_path, monkeypatch):
    monkeypatch.delenv("HIERVIZ_CACHE_LIMIT", raising=False)
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    _free_space(monkeypatch, 40 * GiB)
    assert EngineStore().max_bytes >= 4 * 2.2e9  # the 1.1B model's engine, and room for three more


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
    store.max_bytes = 3 * one + 10  # d needs b's and the run's room
    assert store.save("d", _build()) is None
    assert _kept(store) == {"a", "c", "d"}
    assert sorted(_files(store)) == ["a.engine", "a.json", "a.runtime", "c.engine", "c.json", "c.runtime",
                                     "d.engine", "d.json", "d.runtime"]
    assert store.size() == sum(_files(store).values()) <= store.max_bytes


def test_the_entry_just_written_is_not_evicted_by_its_own_save(tmp_path, monkeypatch):
    store = EngineStore(tmp_path, max_bytes=10**6)
    store.save("old", _build())
    store.max_bytes = _entry_bytes(store, "old") + 10  # room for one entry
    written = store._write

    def skewed(path, data):  # a file server whose clock is an hour behind: the new files look oldest
        written(path, data)
        when = time.time() - 3600
        os.utime(path, (when, when))

    monkeypatch.setattr(store, "_write", skewed)
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


def test_an_engine_with_a_flipped_byte_never_reaches_hv_measure(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HIERVIZ_CACHE", "1")
    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    store = EngineStore(max_bytes=10**6)
    key = build_key(gm, None)
    assert store.save(key, _build(bytes(range(100)), input_binding_names=["x"])) is None
    assert stored_engine(gm, None) == (bytes(range(100)), {"input_binding_names": ["x"]})
    engine = store.folder / f"{key}.engine"
    data = bytearray(engine.read_bytes())
    data[50] ^= 1
    engine.write_bytes(bytes(data))
    assert store.load(key) is not None  # the length agrees: load (a cached build) stats, it does not hash
    found, said = _damaged(lambda: stored_engine(gm, None))
    assert found is None
    assert len(said) == 1 and "its engine file's digest disagrees with the record" in said[0]
    assert not engine.exists()


def test_a_killed_writers_temp_files_are_removed_a_fresh_ones_left(tmp_path):
    store = _kept_one(tmp_path)
    old, fresh = store.folder / ".tmp-killed", store.folder / ".tmp-writing"
    old.write_bytes(b"half an engine")
    fresh.write_bytes(b"an engine being written")
    when = time.time() - STALE_TMP_S - 60
    os.utime(old, (when, when))
    EngineStore(tmp_path)  # opened
    assert not old.exists() and fresh.exists()
    old.write_bytes(b"half an engine")
    os.utime(old, (when, when))
    store.save("other", _build())  # pruned
    assert not old.exists() and fresh.exists()
    assert "other" in _kept(store) and "k" in _kept(store)


def test_cache_info_says_the_limit_and_how_it_was_chosen(cache_dir, monkeypatch, capsys):
    from hierviz.cli.commands import main

    _free_space(monkeypatch, 40 * GiB)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"limit: 10.0 GiB ({10 * GiB} bytes) for each cache (a quarter of the free space on its disk, at least " \
           "2 GiB and at most 20 GiB; HIERVIZ_CACHE_LIMIT=<bytes> sets it)" in out
    monkeypatch.setenv("HIERVIZ_CACHE_LIMIT", str(3 * GiB))
    assert main(["cache", "info"]) == 0
    assert f"limit: 3.0 GiB ({3 * GiB} bytes) for each cache (set by HIERVIZ_CACHE_LIMIT)" in capsys.readouterr().out
