"""The compile cache on disk (`cache_dir=`) keeps each artifact with its length and SHA-256
(hierviz.foundation.disk_store): an artifact changed on disk is never loaded (TorchInductor's are
code), it is one CacheWarning naming it, removed, and compiled again."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from hierviz.foundation.cache_warning import CacheWarning
from hierviz.latency.compiling import compile_cache
from hierviz.latency.compiling.backend_compilers import INDUCTOR
from hierviz.latency.compiling.compile_cache import Entry, load_entry, save_entry

KEY = "ef" + "2" * 62


def _bytes_compiler():
    """A compiler whose artifacts are their bytes, written and read back as they are."""
    def save(artifact, path) -> bool:
        path.write_bytes(artifact)
        return True

    return dataclasses.replace(INDUCTOR, save=save, load=lambda path: path.read_bytes())


@pytest.fixture
def kept(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_cache, "_SWEPT", set())
    compiler = _bytes_compiler()
    assert save_entry(Entry(KEY, "inductor", None, 0.5, True, first_tag="_run_on_acc_0"), b"compiled code",
                      compiler, tmp_path) is None
    return compiler, tmp_path / "inductor" / KEY[:2] / f"{KEY}.bin"


def test_a_kept_artifact_is_loaded_with_its_record(tmp_path, kept) -> None:
    compiler, _ = kept
    entry = load_entry(KEY, compiler, tmp_path)
    assert entry is not None and entry.fn == b"compiled code" and entry.origin == "disk"
    assert entry.compile_s == 0.5 and entry.first_tag == "_run_on_acc_0"


def test_an_artifact_changed_on_disk_is_one_warning_never_loaded_and_removed(tmp_path, kept) -> None:
    compiler, artifact = kept
    artifact.write_bytes(b"compiled c0de")  # the same length, another byte
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert load_entry(KEY, compiler, tmp_path) is None
    said = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert said == [f"hv.measure: the cached inductor artifact {artifact.with_suffix('.*')} is damaged (its bin "
                    "file's digest disagrees with the record); it is removed and compiled again."]
    assert list(artifact.parent.iterdir()) == []
    assert load_entry(KEY, compiler, tmp_path) is None  # a miss, said once
