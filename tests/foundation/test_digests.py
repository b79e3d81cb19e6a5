"""A weight's values are hashed once per process (the capture key, the build key and the compile
cache all ask for them), and never answered from an old digest after an in-place change, for
another view of the storage, or for a new tensor that took a freed one's place."""

from __future__ import annotations

import gc
from pathlib import Path

import torch

from hierviz.foundation import digests


def _counting(monkeypatch) -> list[torch.Tensor]:
    """Count the tensors whose values are actually hashed."""
    hashed: list[torch.Tensor] = []
    real = digests._hash_values

    def counted(t: torch.Tensor) -> str:
        hashed.append(t)
        return real(t)

    monkeypatch.setattr(digests, "_hash_values", counted)
    digests.forget_digests()
    return hashed


def test_a_weight_is_hashed_once_for_every_object_over_it(monkeypatch):
    hashed = _counting(monkeypatch)
    w = torch.randn(64, 32)
    first = digests.tensor_digest(w)
    assert digests.tensor_digest(w) == first
    assert digests.tensor_digest(torch.nn.Parameter(w)) == first  # another object, the same storage
    assert digests.tensor_digests([w, w.detach()]) == [first, first]
    assert len(hashed) == 1


def test_an_in_place_change_is_hashed_again(monkeypatch):
    hashed = _counting(monkeypatch)
    w = torch.zeros(16)
    before = digests.tensor_digest(w)
    w.add_(1)
    after = digests.tensor_digest(w)
    assert after != before
    assert after == digests._hash_values(torch.ones(16))
    assert len(hashed) == 3  # before, after, and the reference just above


def test_another_view_of_the_storage_gets_its_own_digest():
    digests.forget_digests()
    w = torch.arange(12.0).reshape(3, 4)
    whole = digests.tensor_digest(w)
    assert digests.tensor_digest(w[1]) != whole
    assert digests.tensor_digest(w[1]) == digests.tensor_digest(torch.tensor([4.0, 5.0, 6.0, 7.0]))
    assert digests.tensor_digest(w.t()) != whole
    assert digests.tensor_digest(w.view(torch.int32)) != whole


def test_a_new_tensor_at_a_freed_ones_address_is_hashed_anew():
    digests.forget_digests()
    memory = bytearray(torch.zeros(8).numpy().tobytes())
    old = torch.frombuffer(memory, dtype=torch.float32)  # the same address, shape and version each time
    address, before = old.data_ptr(), digests.tensor_digest(old)
    del old
    gc.collect()
    memory[:] = torch.ones(8).numpy().tobytes()
    new = torch.frombuffer(memory, dtype=torch.float32)
    assert new.data_ptr() == address and new._version == 0
    assert digests.tensor_digest(new) == digests._hash_values(torch.ones(8)) != before


def test_freed_storages_are_forgotten(monkeypatch):
    digests.forget_digests()
    monkeypatch.setattr(digests, "_SWEEP_MIN", 4)
    monkeypatch.setattr(digests, "_SWEEP_AT", [4])
    kept = torch.ones(3)
    digests.tensor_digest(kept)
    for _ in range(300):
        digests.tensor_digest(torch.randn(3))
    assert len(digests._DIGESTS) < 16
    assert digests.tensor_digest(kept) == digests._hash_values(kept)


def test_raw_bytes_digest_is_sha256():
    assert digests.data_digest(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert digests.data_digest(memoryview(b"abc")) == digests.data_digest(b"abc")
    running = digests.data_hasher()
    for piece in (b"a", b"bc"):
        running.update(piece)
    assert running.hexdigest() == digests.data_digest(b"abc")


def test_big_weights_already_hashed_start_no_threads(monkeypatch):
    hashed = _counting(monkeypatch)
    weights = [torch.randn(digests.PARALLEL_BYTES // 4 + 1) for _ in range(3)]
    first = digests.tensor_digests(weights)
    assert len(hashed) == 3

    def no_pool(*args, **kwargs):
        raise AssertionError("a thread pool for weights already hashed")

    monkeypatch.setattr(digests.concurrent.futures, "ThreadPoolExecutor", no_pool)
    assert digests.tensor_digests(weights) == first and len(hashed) == 3


def test_text_and_json_digests_are_short_sha256_prefixes():
    assert digests.text_digest("abc") == "ba7816bf8f01cfea"
    assert digests.text_digest("abc", size=8) == "ba7816bf"
    assert digests.json_digest({"b": 1, "a": [2, 3]}) == digests.json_digest({"a": [2, 3], "b": 1})
    assert digests.json_digest({"a": 1}) != digests.json_digest({"a": 2})
    assert len(digests.text_digest("\ud800", size=64)) == 64  # a lone surrogate is hashed, not refused


def test_parts_added_one_by_one_keep_their_boundaries():
    def of(*parts):
        h = digests.PartsDigest()
        for part in parts:
            h.add(part)
        return h.hexdigest()

    assert of(1, 23) != of(12, 3)
    assert of(("relu", 1), ("add", 2)) == of(("relu", 1), ("add", 2)) != of(("add", 2), ("relu", 1))


def test_cache_keys_are_made_by_the_digests_module_alone():
    root = Path(digests.__file__).parent.parent
    own = {"foundation/digests.py", "drawing/palette.py"}  # the palette's colour hash is no cache key
    hashing = {p.relative_to(root).as_posix() for p in root.rglob("*.py") if "hashlib" in p.read_text()}
    assert hashing - own == set()
