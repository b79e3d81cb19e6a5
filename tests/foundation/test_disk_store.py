"""The disk store every cache keeps its entries in (hierviz.foundation.disk_store): a put is
atomic (a killed writer leaves the old entry whole and only its own temp file), the least recently
used entries go first and the bound holds, a damaged entry is one warning and a miss (never wrong
bytes), a killed writer's temp file is removed and a live one's kept, and four processes putting
and reading at once never see half an entry."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import warnings

import pytest

from hierviz.foundation import temp_files
from hierviz.foundation.cache_warning import CacheWarning
from hierviz.foundation.damaged_entry import DamagedEntry
from hierviz.foundation.digests import data_digest
from hierviz.foundation.disk_store import DiskStore
from tests.disk_helpers import OLD, left_temp


def _names(store: DiskStore) -> list[str]:
    """The files in the store's folder, temp files included."""
    return sorted(p.name for p in store.folder.iterdir())


def _age(store: DiskStore, name: str, seconds_ago: float) -> None:
    """Make `name`'s files last used `seconds_ago` (file times are too coarse to order puts made
    within a few milliseconds)."""
    when = time.time() - seconds_ago
    for path in store.folder.glob(f"{name}.*"):
        os.utime(path, (when, when))


def _warned(call) -> tuple[object, list[str]]:
    """What `call()` gives, and the CacheWarnings it issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = call()
    return value, [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


# ---------------------------------------------------------------------------- atomic write
def test_a_put_keeps_its_files_and_a_record_of_their_lengths_and_digests(tmp_path) -> None:
    store = DiskStore(tmp_path / "s", 10**6)
    assert store.put("k", {"stage": "built"}, {".engine": b"an engine", ".runtime": bytearray(b"rt")})
    assert _names(store) == ["k.engine", "k.json", "k.runtime"]  # no temp file left
    record = json.loads((store.folder / "k.json").read_text())
    assert record["files"] == {".engine": [9, data_digest(b"an engine")], ".runtime": [2, data_digest(b"rt")]}
    assert store.get("k") == {"stage": "built"}
    assert store.read("k", ".engine") == b"an engine" and store.read("k", ".other") is None
    assert store.get("missing") is None and store.read("missing", ".engine") is None


def test_a_writing_function_writes_the_temp_file_named_for_this_process(tmp_path) -> None:
    store = DiskStore(tmp_path, None)
    given = []

    def save(path) -> bool:
        given.append(path)
        path.write_bytes(b"an artifact")
        return True

    assert store.put("k", {}, {".bin": save})
    assert temp_files.writer_of(given[0].name).pid == os.getpid() and given[0].parent == tmp_path
    assert store.checked_path("k", ".bin") == tmp_path / "k.bin"
    assert not store.put("j", {}, {".bin": lambda path: False})  # declined: nothing kept
    assert _names(store) == ["k.bin", "k.json"]


def test_a_full_disk_mid_put_leaves_the_old_entry_whole_and_no_temp_file(tmp_path, monkeypatch) -> None:
    store = DiskStore(tmp_path, None)
    store.put("k", {"v": 1}, {".a": b"old a", ".b": b"old b"})
    written = temp_files.write_all

    def fills(fd, data):  # the disk takes the first file, not the second
        if bytes(data) == b"new b":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written(fd, data)

    monkeypatch.setattr(temp_files, "write_all", fills)
    with pytest.raises(OSError):
        store.put("k", {"v": 2}, {".a": b"new a", ".b": b"new b"})
    assert store.get("k") == {"v": 1} and store.read("k", ".a") == b"old a" and store.read("k", ".b") == b"old b"
    assert _names(store) == ["k.a", "k.b", "k.json"]


def _put_then_hang(folder: str, ready) -> None:
    """Put a new `k` whose file is written half, say so, and wait (to be killed)."""
    def half(path) -> bool:
        path.write_bytes(b"half of the new")
        ready.set()
        time.sleep(600)
        return True

    DiskStore(folder, None).put("k", {"v": 2}, {".a": half})


def test_a_writer_killed_mid_put_leaves_the_old_entry_and_its_temp_file_goes_once_stale(tmp_path) -> None:
    store = DiskStore(tmp_path, None)
    store.put("k", {"v": 1}, {".a": b"the old one"})
    fork = multiprocessing.get_context("fork")
    ready = fork.Event()
    writer = fork.Process(target=_put_then_hang, args=(str(tmp_path), ready))
    writer.start()
    assert ready.wait(60)
    os.kill(writer.pid, signal.SIGKILL)  # kill -9, mid-write
    writer.join()
    assert store.get("k") == {"v": 1} and store.read("k", ".a") == b"the old one"
    (left,) = [p for p in tmp_path.iterdir() if p.name.startswith(temp_files.PREFIX)]
    assert temp_files.writer_of(left.name).pid == writer.pid
    DiskStore(tmp_path, None)  # opened: the file is fresh (its writer may be slow, not gone), kept
    assert left.exists()
    when = time.time() - OLD
    os.utime(left, (when, when))
    DiskStore(tmp_path, None)  # opened again: stale now, removed
    assert not left.exists() and _names(store) == ["k.a", "k.json"]


def test_names_that_would_mix_entries_are_refused(tmp_path) -> None:
    store = DiskStore(tmp_path, None)
    for name, files in (("a.b", {}), ("a/b", {}), ("", {}), ("k", {".json": b"x"})):
        with pytest.raises(ValueError, match="a name without '.' or '/'"):
            store.put(name, {}, files)
    assert _names(store) == []


def test_a_sharded_store_keeps_each_entry_in_its_shard_and_sweeps_every_shard(tmp_path, writers) -> None:
    killed, _ = writers
    store = DiskStore(tmp_path, None, shard=2)
    store.put("ab12", {"n": 1}, {".bin": b"one"})
    store.put("cd34", {"n": 2}, {".bin": b"two"})
    assert sorted(p.name for p in (tmp_path / "ab").iterdir()) == ["ab12.bin", "ab12.json"]
    assert store.read("cd34", ".bin") == b"two" and [e.name for e in store.entries()] in (["ab12", "cd34"],
                                                                                          ["cd34", "ab12"])
    left = [left_temp(tmp_path / "ab", f"{temp_files.prefix(killed)}x.bin"),
            left_temp(tmp_path, f"{temp_files.prefix(killed)}y.bin")]
    DiskStore(tmp_path, None, shard=2)
    assert not any(p.exists() for p in left)


# ---------------------------------------------------------------------------- eviction and the bound
def test_the_least_recently_used_entries_go_first_all_their_files_together(tmp_path) -> None:
    store = DiskStore(tmp_path, 10**6)
    for name in "abc":
        store.put(name, {}, {".data": b"x" * 1000})
    for ago, name in ((30, "a"), (20, "b"), (10, "c")):
        _age(store, name, ago)
    one = store.entries()[0].bytes
    assert [e.name for e in store.entries()] == ["a", "b", "c"] and {e.bytes for e in store.entries()} == {one}
    assert store.get("a") is not None  # used now: the newest
    store.max_bytes = 3 * one + 10
    store.put("d", {}, {".data": b"x" * 1000})
    assert [e.name for e in store.entries()] == ["c", "a", "d"]
    assert _names(store) == ["a.data", "a.json", "c.data", "c.json", "d.data", "d.json"]
    assert store.size() <= store.max_bytes


def test_the_bound_holds_after_every_put_and_the_entry_just_put_stays(tmp_path) -> None:
    store = DiskStore(tmp_path, 5000)
    for i in range(12):
        store.put(f"e{i}", {"i": i}, {".data": bytes(300 + 100 * i)})
        assert store.size() <= 5000 or [e.name for e in store.entries()] == [f"e{i}"]
        assert store.get(f"e{i}") == {"i": i}
    store.put("big", {}, {".data": bytes(6000)})  # larger than the bound by itself: kept alone
    assert [e.name for e in store.entries()] == ["big"]


def test_an_unbounded_store_evicts_nothing(tmp_path) -> None:
    store = DiskStore(tmp_path, None)
    for i in range(5):
        store.put(f"e{i}", {}, {".data": bytes(10_000)})
    assert len(store.entries()) == 5 and store.evict() == []
    assert store.clear() == 5 and _names(store) == []


# ---------------------------------------------------------------------------- checked on read
@pytest.mark.parametrize("damage, why", [
    (lambda data: data[:4], "its data file is 4 bytes, the record says 11"),
    (lambda data: bytes([data[0] ^ 1]) + data[1:], "its data file's digest disagrees with the record"),
])
def test_a_damaged_file_is_never_handed_over(tmp_path, damage, why) -> None:
    store = DiskStore(tmp_path, None)
    store.put("k", {}, {".data": b"the payload"})
    path = store.path("k", ".data")
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(DamagedEntry) as caught:
        store.read("k", ".data")
    assert caught.value.why == why
    with pytest.raises(DamagedEntry):
        store.checked_path("k", ".data")
    _, said = _warned(lambda: store.damaged("k", "the cached k is damaged"))
    assert said == ["the cached k is damaged"] and _names(store) == []
    assert store.get("k") is None  # a miss from now on


@pytest.mark.parametrize("record, why", [
    (b"{not json", "its record is not JSON"),
    (b"[1, 2]", "its record is not this store's"),
    (json.dumps({"format": "hierviz-disk-store/1", "name": "other", "files": {}, "record": {}}).encode(),
     "its record is not this entry's"),
])
def test_a_damaged_record_is_a_damaged_entry(tmp_path, record, why) -> None:
    store = DiskStore(tmp_path, None)
    store.put("k", {}, {".data": b"the payload"})
    store.path("k", ".json").write_bytes(record)
    with pytest.raises(DamagedEntry, match=why):
        store.get("k")


def test_a_missing_file_is_a_damaged_entry_and_another_versions_record_a_miss(tmp_path) -> None:
    store = DiskStore(tmp_path, None)
    store.put("k", {}, {".data": b"the payload"})
    store.path("k", ".data").unlink()
    with pytest.raises(DamagedEntry, match="its data file is gone"):
        store.get("k")
    store.path("k", ".json").write_text(json.dumps({"key": "k", "check": {}}))  # an older hierviz's record
    assert store.get("k") is None


def test_an_entry_put_again_meanwhile_is_not_removed_as_damaged(tmp_path) -> None:
    store, other = DiskStore(tmp_path, None), DiskStore(tmp_path, None)
    store.put("k", {}, {".data": b"the payload"})
    store.path("k", ".data").write_bytes(b"the paylo4d")
    with pytest.raises(DamagedEntry):
        store.read("k", ".data")
    other.put("k", {"again": True}, {".data": b"a new payload"})  # another process writes it anew
    _, said = _warned(lambda: store.damaged("k", "damaged"))
    assert said == ["damaged"] and store.get("k") == {"again": True} and store.read("k", ".data") == b"a new payload"


# ---------------------------------------------------------------------------- temp files
def test_stale_temp_files_are_removed_when_a_store_opens_and_by_clear_a_live_writers_kept(tmp_path, writers) -> None:
    killed, writing = writers
    folder = tmp_path / "s"
    dead = left_temp(folder, f"{temp_files.prefix(killed)}a.data")
    live = left_temp(folder, f"{temp_files.prefix(writing)}b.data")
    older = left_temp(folder, ".tmp-unnamed.data")  # an older hierviz's name: by its age alone
    fresh = left_temp(folder, f"{temp_files.prefix(killed)}c.data", age_s=5)  # its writer may be slow
    store = DiskStore(folder, None, sweep=False)
    assert store.temp_survey() == temp_files.Survey(4, 4 * 13, 2)
    DiskStore(folder, None)
    assert [p.exists() for p in (dead, live, older, fresh)] == [False, True, False, True]
    os.utime(fresh, (time.time() - OLD,) * 2)
    store.put("k", {}, {".data": b"x"})
    assert store.clear() == 1
    assert _names(store) == [live.name]


def test_a_live_writers_temp_file_in_a_second_process_is_kept(tmp_path) -> None:
    """Another process writes a temp file named for itself and keeps running: however old its
    file, no store removes it; once that process is gone, the next store opened does."""
    folder = tmp_path / "s"
    folder.mkdir()
    code = ("import os, sys\n"
            "path = os.path.join(sys.argv[1], sys.argv[2] + str(os.getpid()) + '-x.data')\n"
            "open(path, 'wb').write(b'being written')\n"
            "print(path, flush=True)\n"
            "sys.stdin.read()\n")
    prefix = temp_files.prefix(0)[:-2]  # `.tmp-<host>-`: the second process adds its own pid
    other = subprocess.Popen([sys.executable, "-c", code, str(folder), prefix], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        written = other.stdout.readline().strip()
        assert temp_files.writer_of(os.path.basename(written)).pid == other.pid
        os.utime(written, (time.time() - OLD,) * 2)
        store = DiskStore(folder, 10)
        store.put("k", {}, {".data": b"x" * 100})  # evicts: the bound is small
        store.clear()
        assert os.path.exists(written)
    finally:
        other.communicate("")
    DiskStore(folder, 10)
    assert not os.path.exists(written)


def test_a_shared_folder_sweeps_only_its_own_suffix(tmp_path) -> None:
    """The system's temp folder is everyone's: the loose engines' store sweeps `.tmp-*.engine`."""
    mine = left_temp(tmp_path, ".tmp-unnamed.engine")
    theirs = left_temp(tmp_path, ".tmp-unnamed.other")
    DiskStore(tmp_path, None, temp_suffix=".engine")
    assert not mine.exists() and theirs.exists()


# ---------------------------------------------------------------------------- processes at once
def _put_and_read(folder: str, worker: int, rounds: int, damaged) -> None:
    """Put the shared entry and one's own, read the shared one back each round."""
    store = DiskStore(folder, 200_000)
    for i in range(rounds):
        size = 1000 * (1 + (worker * rounds + i) % 37)
        payload = bytes([size % 251]) * size  # its bytes follow from its length: a mixed entry shows
        store.put("shared", {"size": size}, {".a": payload, ".b": payload[:100]})
        store.put(f"w{worker}-{i % 5}", {}, {".a": payload})
        try:
            got = store.read("shared", ".a")
        except DamagedEntry:
            damaged.value += 1
            continue
        if got is not None and got != bytes([len(got) % 251]) * len(got):
            damaged.value += 1


def test_four_processes_putting_and_reading_one_folder_at_once_never_see_half_an_entry(tmp_path) -> None:
    fork = multiprocessing.get_context("fork")
    damaged = fork.Value("i", 0)
    workers = [fork.Process(target=_put_and_read, args=(str(tmp_path), w, 40, damaged)) for w in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(120)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    assert damaged.value == 0
    store = DiskStore(tmp_path, 200_000)
    size = store.get("shared")["size"]
    assert store.read("shared", ".a") == bytes([size % 251]) * size
    assert store.temp_paths() == [] and store.size() <= 200_000
