"""The on-disk store of captures: a captured graph kept under the user's cache folder under its
key (hierviz.capturing.capture_key, everything that can change it), so that a new process (a
notebook restart, a CLI call) does not export and lower the same model again.

`hierviz.capturing.aten_capture` checks a cached graph before using it
(hierviz.capturing.cached_capture_check: the model traced on fake tensors does the computation it
did when the entry was kept, or else the model's outputs agree with the graph's). An entry holds
the model's weights as references (their names in the model, hierviz.capturing.model_references),
not their bytes.

torch.compile's captures (`hv.capture(..., ir="torch_compile")`: several graphs, their first
calls' values and what the capture says of them) are kept the same way (`save_graphs` /
`load_graphs`), under the same kind of key with "torch_compile" in its inputs part, in the same
folder (hierviz.capturing.by_graph.cached_graphs).

`CaptureStore` keeps one entry per key in a hierviz.foundation.disk_store.DiskStore (the graph as
plain data, `hierviz.capturing.graph_codec`, pickled into `<key>.capture`, its length and SHA-256 in
`<key>.json`): written atomically, checked when read (a damaged entry is one CacheWarning and a
fresh capture), bounded in size with the least recently used entries removed first (`limit()`:
a quarter of the disk's free space, 2-20 GiB, or all of it below 2 GiB:
hierviz.foundation.cache_limit), its killed writers' temp files removed by the next store opened
and by `clear()` (a fresh one of another process is left alone). The folder is
hierviz.foundation.cache_folder's (`$HIERVIZ_CACHE_DIR`, else `$XDG_CACHE_HOME/hierviz`, else
`~/.cache/hierviz`) + `/captures`; `HIERVIZ_CACHE=0` (or `hv.capture(..., cache=False)`) turns the
cache off, and so does a folder that is a file. Entries are pickles: only a folder the user owns
should be used.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import torch

from hierviz.capturing.graph_codec import NOT_PICKLABLE, pack_graph, unpack_graph
from hierviz.capturing.model_references import referenced, resolved
from hierviz.errors import CustomOpUnavailable
from hierviz.foundation.cache_folder import ENV_DIR, ENV_SWITCH, enabled, folder, folder_problem
from hierviz.foundation.cache_limit import DEFAULT_LIMIT, ENV_LIMIT, cache_limit
from hierviz.foundation.cache_warning import CacheWarning
from hierviz.foundation.damaged_entry import DamagedEntry
from hierviz.foundation.disk_store import DiskStore

FORMAT = "hierviz-capture/2"  # /2: the modules moved into packages (pickled class paths changed)
GRAPHS_FORMAT = "hierviz-graphs-capture/2"  # torch.compile's capture: several graphs and their values
SUFFIX = ".capture"


# what reading a damaged, foreign or outdated entry raises: the file (OSError), pickle (truncated:
# EOFError; a class moved or gone: ImportError, AttributeError; UnpicklingError), torch's tensor
# storage (RuntimeError), and an entry of another shape (ValueError, KeyError, TypeError, IndexError)
UNREADABLE: tuple[type[Exception], ...] = (OSError, EOFError, pickle.UnpicklingError, ImportError, AttributeError,
                                           RuntimeError, ValueError, KeyError, TypeError, IndexError)
# what writing an entry raises: a full disk or a read-only folder (OSError), a value that does not
# pickle (graph_codec.NOT_PICKLABLE)
UNWRITABLE: tuple[type[Exception], ...] = (OSError, *NOT_PICKLABLE)
# what makes an entry one to capture again: the store's check on read (its bytes are not the ones
# written), or what reading it raised
_DAMAGED: tuple[type[Exception], ...] = (DamagedEntry, *UNREADABLE)


def limit() -> int:
    """The size bound in bytes of the capture cache, and of the build cache (each): see
    hierviz.foundation.cache_limit. Read when a store opens."""
    return cache_limit(folder()).bytes


def storable(gm: torch.fx.GraphModule) -> bool:
    """Whether the graph's plain-data form (hierviz.capturing.graph_codec) keeps all of it: no symbolic
    shape or value (a dynamic-shape capture, a data-dependent size) in any node's meta."""
    return all(not _symbolic(n.meta["val"]) for n in gm.graph.nodes if "val" in n.meta)


def _symbolic(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value._has_symbolic_sizes_strides
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_symbolic(v) for v in value)
    return False


class CaptureStore:
    """The cache's entries (one per key), bounded by `max_bytes` (its DiskStore in `<folder>/captures`,
    `store`, keeps the bound: `store.max_bytes`)."""

    def __init__(self, where: Path | None = None, max_bytes: int | None = None, *, sweep: bool = True) -> None:
        """`sweep`: remove the temp files killed writers left now (`hierviz cache info` only counts them)."""
        self.store = DiskStore((where if where is not None else folder()) / "captures",
                               limit() if max_bytes is None else max_bytes, sweep=sweep)
        self.folder = self.store.folder
        self.not_read: str | None = None  # the capture's note when the last entry named a custom op not had here

    def _path(self, key: str) -> Path:
        return self.store.path(key, SUFFIX)

    def _entry(self, key: str, fmt: str) -> dict | None:
        """The entry kept under `key`, checked to be a `fmt` entry for that key (ValueError if
        not); None when there is none."""
        data = self.store.read(key, SUFFIX)
        if data is None:
            return None
        entry = pickle.loads(data)
        if not isinstance(entry, dict) or entry.get("format") != fmt or entry.get("key") != key:
            raise ValueError(f"not a {fmt} entry for this key")
        return entry

    def load(self, key: str, model: torch.nn.Module | None = None) -> tuple[torch.fx.GraphModule | None, dict]:
        """The cached graph and its stored graph meta, or (None, {}) when there is no entry.
        Weights stored as references are taken from `model` (the key says they are equal).
        An entry that cannot be read is removed, with one CacheWarning; one whose custom op
        cannot be registered here is kept, and `not_read` says which op."""
        self.not_read = None
        try:
            entry = self._entry(key, FORMAT)
            if entry is None:
                return None, {}
            gm = unpack_graph(dict(entry["graph"], attrs=resolved(entry["graph"]["attrs"], model)))
        except CustomOpUnavailable as exc:  # the entry is sound: this process lacks an op (a note, not a warning)
            self.not_read = self._op_note(exc)
            return None, {}
        except _DAMAGED as exc:  # any unreadable entry is captured again
            self.unreadable(key, exc)
            return None, {}
        self.store.used(key)
        return gm, dict(entry.get("meta", {}))

    def load_graphs(self, key: str, model: torch.nn.Module | None = None) -> tuple[list[torch.fx.GraphModule], dict,
                                                                                     Any] | None:
        """(graphs, tensors, payload) save_graphs kept under `key`, or None when there is no
        entry. Tensors stored as references are the model's own (shared where the capture
        shared them). An entry that cannot be read is removed, with one CacheWarning; one whose
        custom op cannot be registered here is kept, and `not_read` says which op."""
        self.not_read = None
        try:
            entry = self._entry(key, GRAPHS_FORMAT)
            if entry is None:
                return None
            graphs = [unpack_graph(dict(g, attrs=resolved(g["attrs"], model))) for g in entry["graphs"]]
            tensors = resolved(entry["tensors"], model)
            payload = entry["payload"]
        except CustomOpUnavailable as exc:  # the entry is sound: this process lacks an op (a note, not a warning)
            self.not_read = self._op_note(exc)
            return None
        except _DAMAGED as exc:  # any unreadable entry is captured again
            self.unreadable(key, exc)
            return None
        self.store.used(key)
        return graphs, tensors, payload

    def _op_note(self, exc: CustomOpUnavailable) -> str:
        return f"capture: the cached capture was not used ({exc}), so the model was captured again"

    def unreadable(self, key: str, exc: BaseException) -> None:
        """Say (one CacheWarning) that the entry under `key` could not be used, and remove it."""
        why = exc.why if isinstance(exc, DamagedEntry) else f"{type(exc).__name__}: {str(exc)[:200]}"
        self.store.damaged(key, f"hv.capture: the cached capture {self._path(key)} could not be read ({why}); "
                                "capturing again. `hierviz cache clear` empties the cache.")

    def save_graphs(self, key: str, graphs: list[torch.fx.GraphModule], tensors: dict[str, Any], payload: Any,
                    model: torch.nn.Module | None = None) -> bool:
        """Keep several graphs, named tensors (a graph's first-call values) and a picklable
        payload under `key`, as `save` keeps one graph (weights equal to `model`'s as references).
        False when it is not kept (a graph that cannot be written as plain data, an unwritable
        folder: not an error)."""
        if not all(storable(gm) for gm in graphs):
            return False
        try:
            packed = []
            for gm in graphs:
                graph = pack_graph(gm)
                graph["attrs"] = referenced(graph["attrs"], model)
                packed.append(graph)
            entry = {"format": GRAPHS_FORMAT, "key": key, "graphs": packed,
                     "tensors": referenced(tensors, model), "payload": payload}
            return self._write(key, entry)
        except UNWRITABLE:  # a graph or value that does not pickle, a full disk: captured again next time
            return False

    def _write(self, key: str, entry: dict) -> bool:
        """Put `entry` under `key` (atomically; the least recently used beyond the bound go)."""
        return self.store.put(key, {"format": entry["format"]},
                              {SUFFIX: pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)})

    def save(self, key: str, gm: torch.fx.GraphModule, meta: dict, model: torch.nn.Module | None = None) -> bool:
        """Keep `gm` under `key` (atomically), then remove the least recently used entries
        beyond the size bound. Weights equal to `model`'s are kept as references to them (the
        key holds their hash), so an entry is the graph, not a second copy of the model. False
        when it is not kept: a graph with symbolic shapes (its plain-data form drops them), or
        a folder that cannot be written (not an error)."""
        if not storable(gm):
            return False
        try:
            graph = pack_graph(gm)
            graph["attrs"] = referenced(graph["attrs"], model)
            return self._write(key, {"format": FORMAT, "key": key, "graph": graph, "meta": meta})
        except UNWRITABLE:  # a full disk or a read-only folder: capture works without the cache
            return False

    def entries(self) -> list[tuple[Path, int, float]]:
        """(path of its graph, bytes, last used) of every entry, least recently used first."""
        return [(self._path(e.name), e.bytes, e.used) for e in self.store.entries()]

    def evict(self) -> list[Path]:
        """Remove least recently used entries until the total is within the bound."""
        return [self._path(name) for name in self.store.evict()]

    def remove(self, key: str) -> None:
        self.store.remove(key)

    def clear(self) -> int:
        """Remove every entry, and the temp files killed writers left (one another process is
        writing now stays); how many entries there were."""
        return self.store.clear()

    def info(self) -> dict[str, Any]:
        """The folder, its entries and their bytes, the limit, whether the cache is on, and its
        temp files (`temp`: a temp_files.Survey)."""
        entries = self.store.entries()
        return {"folder": str(self.folder), "entries": len(entries), "bytes": sum(e.bytes for e in entries),
                "limit": self.store.max_bytes, "enabled": enabled(), "temp": self.store.temp_survey()}


__all__ = ["CaptureStore", "CacheWarning", "GRAPHS_FORMAT", "storable", "folder", "folder_problem", "enabled", "limit",
           "FORMAT", "DEFAULT_LIMIT", "ENV_DIR", "ENV_SWITCH", "ENV_LIMIT"]
