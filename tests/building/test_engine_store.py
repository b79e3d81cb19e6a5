"""The build cache on disk: its size bound (from the disk's free space), what it keeps and evicts,
and entries checked when read (a damaged engine is built again, never handed to hv.measure)."""

from __future__ import annotations

import os
import shutil
import time
import types

import pytest

from hierviz.building.engine_store import EngineStore
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
