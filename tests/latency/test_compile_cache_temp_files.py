"""The compile cache on disk (`cache_dir=`) writes each artifact into a temp file named for its
writer; the temp files killed writers left under a folder are removed the first time a process
uses it, and one another process is writing now is left alone."""

from __future__ import annotations

import dataclasses
import os


from hierviz.foundation import temp_files
from hierviz.latency.compiling import compile_cache
from hierviz.latency.compiling.backend_compilers import INDUCTOR
from hierviz.latency.compiling.compile_cache import Entry, load_entry, save_entry
from tests.disk_helpers import left_temp

def test_the_first_use_of_a_folder_removes_what_killed_writers_left(tmp_path, writers, monkeypatch) -> None:
    killed, writing = writers
    monkeypatch.setattr(compile_cache, "_SWEPT", set())
    folder = tmp_path / "inductor" / "ab"
    left = left_temp(folder, f"{temp_files.prefix(killed)}x.tmp")
    busy = left_temp(folder, f"{temp_files.prefix(writing)}y.tmp")
    older = left_temp(folder, "tmpk3j4h5.tmp")  # an older hierviz's name: by its age alone
    assert load_entry("ab" + "0" * 62, INDUCTOR, tmp_path) is None
    assert sorted(p.name for p in folder.iterdir()) == [busy.name]
    assert not left.exists() and not older.exists()


def test_an_artifact_is_written_into_a_temp_file_named_for_this_process(tmp_path, monkeypatch) -> None:
    named: list[str] = []

    def save(artifact, path) -> bool:
        named.append(path.name)
        path.write_bytes(b"an artifact")
        return True

    compiler = dataclasses.replace(INDUCTOR, save=save)
    assert save_entry(Entry("cd" + "1" * 62, "inductor", None, 0.1, True), object(), compiler, tmp_path) is None
    assert len(named) == 1 and temp_files.writer_of(named[0]).pid == os.getpid()
    folder = tmp_path / "inductor" / "cd"
    assert sorted(p.name for p in folder.iterdir()) == ["cd" + "1" * 62 + ".bin", "cd" + "1" * 62 + ".json"]
