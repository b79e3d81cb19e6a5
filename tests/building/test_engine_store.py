"""The build cache on disk: its size bound (from the disk's free space), what it keeps and evicts,
and entries checked when read (a damaged engine is built again, never handed to hv.measure)."""

from __future__ import annotations

import shutil
import types

import pytest

from hierviz.capturing import disk_cache

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
