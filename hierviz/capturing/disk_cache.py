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

`CaptureStore` keeps one file per key (the graph as plain data, `hierviz.capturing.graph_codec`), written
atomically (a temporary file, then `os.replace`, so that no process reads half an entry),
bounded in size with the least recently used entries removed first (`limit()`: a quarter of
the disk's free space, 2-20 GiB, or all of it below 2 GiB: hierviz.capturing.cache_limit). The
temp file a writer killed mid-entry leaves is removed by the next store opened, and by `clear()`
(hierviz.foundation.temp_files: a fresh one of another process is left alone). The folder
is `$HIERVIZ_CACHE_DIR`, else `$XDG_CACHE_HOME/hierviz`, else `~/.cache/hierviz`; `HIERVIZ_CACHE=0`
(or `hv.capture(..., cache=False)`) turns the cache off, and so does a folder that is a file
(said once: `folder_problem`). Entries are pickles: only a folder the user owns should be used.
"""

from __future__ import annotations

import os
import pickle
import warnings
from pathlib import Path
from typing import Any

import torch

from hierviz.capturing.cache_limit import DEFAULT_LIMIT, ENV_LIMIT, cache_limit
from hierviz.capturing.cache_warning import CacheWarning
from hierviz.capturing.graph_codec import NOT_PICKLABLE, pack_graph, unpack_graph
from hierviz.capturing.model_references import referenced, resolved
from hierviz.errors import CustomOpUnavailable, user_stacklevel
from hierviz.foundation import temp_files

FORMAT = "hierviz-capture/2"  # /2: the modules moved into packages (pickled class paths changed)
GRAPHS_FORMAT = "hierviz-graphs-capture/2"  # torch.compile's capture: several graphs and their values
ENV_DIR, ENV_SWITCH = "HIERVIZ_CACHE_DIR", "HIERVIZ_CACHE"
SUFFIX = ".capture"
_OFF = {"0", "false", "no", "off"}
_SAID: set[str] = set()  # cache folders said in this process to be files


# what reading a damaged, foreign or outdated entry raises: the file (OSError), pickle (truncated:
# EOFError; a class moved or gone: ImportError, AttributeError; UnpicklingError), torch's tensor
# storage (RuntimeError), and an entry of another shape (ValueError, KeyError, TypeError, IndexError)
UNREADABLE: tuple[type[Exception], ...] = (OSError, EOFError, pickle.UnpicklingError, ImportError, AttributeError,
                                           RuntimeError, ValueError, KeyError, TypeError, IndexError)
# what writing an entry raises: a full disk or a read-only folder (OSError), a value that does not
# pickle (graph_codec.NOT_PICKLABLE)
UNWRITABLE: tuple[type[Exception], ...] = (OSError, *NOT_PICKLABLE)


def folder() -> Path:
    """Where captures are kept: $HIERVIZ_CACHE_DIR, else the user's cache folder + /hierviz."""
    explicit = os.environ.get(ENV_DIR)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hierviz"


def folder_problem() -> str | None:
    """Why the cache folder cannot be one (it, or a folder above it, is a file), in one
    sentence saying what to do; None when it can."""
    where = folder()
    at = where
    try:
        while not at.exists() and at.parent != at:
            at = at.parent
        if at.is_dir():
            return None
    except OSError:  # a folder above it that cannot be searched: writing there fails quietly, as for a read-only one
        return None
    named = f"{ENV_DIR}={str(where)!r}" if os.environ.get(ENV_DIR) else f"the cache folder {where}"
    what = "is a file" if at == where else f"is inside {at}, which is a file"
    return (f"hierviz's cache is off: {named} {what}, not a folder; set {ENV_DIR} to a folder (or unset it for "
            "the default ~/.cache/hierviz)")


def enabled(cache: bool = True) -> bool:
    """Whether captures (and builds) are cached: `cache`, not HIERVIZ_CACHE=0, and a cache folder
    that can be one (else one CacheWarning says why: `folder_problem`)."""
    if not cache or os.environ.get(ENV_SWITCH, "1").strip().lower() in _OFF:
        return False
    problem = folder_problem()
    if problem is None:
        return True
    if problem not in _SAID:
        _SAID.add(problem)
        warnings.warn(problem, CacheWarning, stacklevel=user_stacklevel())
    return False


def limit() -> int:
    """The size bound in bytes of the capture cache, and of the build cache (each): see
    hierviz.capturing.cache_limit. Read when a store opens."""
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
    """The cache's folder of entries (one file per key), bounded by `limit` bytes."""

    def __init__(self, where: Path | None = None, max_bytes: int | None = None, *, sweep: bool = True) -> None:
        """`sweep`: remove the temp files killed writers left now (`hierviz cache info` only counts them)."""
        self.folder = (where if where is not None else folder()) / "captures"
        self.max_bytes = limit() if max_bytes is None else max_bytes
        self.not_read: str | None = None  # the capture's note when the last entry named a custom op not had here
        if sweep:
            temp_files.sweep(temp_files.temp_paths(self.folder))

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}{SUFFIX}"

    def _entry(self, key: str, fmt: str) -> dict:
        """The entry kept under `key`, checked to be a `fmt` entry for that key (ValueError if not)."""
        with open(self._path(key), "rb") as f:
            entry = pickle.load(f)
        if not isinstance(entry, dict) or entry.get("format") != fmt or entry.get("key") != key:
            raise ValueError(f"not a {fmt} entry for this key")
        return entry

    def _used(self, key: str) -> None:
        try:
            os.utime(self._path(key))  # recently used: evicted last
        except OSError:
            pass

    def load(self, key: str, model: torch.nn.Module | None = None) -> tuple[torch.fx.GraphModule | None, dict]:
        """The cached graph and its stored graph meta, or (None, {}) when there is no entry.
        Weights stored as references are taken from `model` (the key says they are equal).
        An entry that cannot be read is removed, with one CacheWarning; one whose custom op
        cannot be registered here is kept, and `not_read` says which op."""
        self.not_read = None
        try:
            entry = self._entry(key, FORMAT)
            gm = unpack_graph(dict(entry["graph"], attrs=resolved(entry["graph"]["attrs"], model)))
        except FileNotFoundError:
            return None, {}
        except CustomOpUnavailable as exc:  # the entry is sound: this process lacks an op (a note, not a warning)
            self.not_read = self._op_note(exc)
            return None, {}
        except UNREADABLE as exc:  # any unreadable entry is captured again
            self.unreadable(key, exc)
            return None, {}
        self._used(key)
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
            graphs = [unpack_graph(dict(g, attrs=resolved(g["attrs"], model))) for g in entry["graphs"]]
            tensors = resolved(entry["tensors"], model)
            payload = entry["payload"]
        except FileNotFoundError:
            return None
        except CustomOpUnavailable as exc:  # the entry is sound: this process lacks an op (a note, not a warning)
            self.not_read = self._op_note(exc)
            return None
        except UNREADABLE as exc:  # any unreadable entry is captured again
            self.unreadable(key, exc)
            return None
        self._used(key)
        return graphs, tensors, payload

    def _op_note(self, exc: CustomOpUnavailable) -> str:
        return f"capture: the cached capture was not used ({exc}), so the model was captured again"

    def unreadable(self, key: str, exc: BaseException) -> None:
        """Say (one CacheWarning) that the entry under `key` could not be used, and remove it."""
        warnings.warn(f"hv.capture: the cached capture {self._path(key)} could not be read ({type(exc).__name__}: "
                      f"{str(exc)[:200]}); capturing again. `hierviz cache clear` empties the cache.",
                      CacheWarning, stacklevel=user_stacklevel())
        self.remove(key)

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
        """Write `entry` under `key` atomically (a temporary file renamed), then evict beyond the bound."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = temp_files.make(self.folder, SUFFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(entry, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self._path(key))
        except BaseException:
            os.unlink(tmp)
            raise
        self.evict()
        return True

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
        """(path, bytes, last used) of every entry, least recently used first."""
        out = []
        try:
            paths = list(self.folder.glob(f"*{SUFFIX}"))
        except OSError:
            return []
        for path in paths:
            if path.name.startswith(temp_files.PREFIX):
                continue
            try:
                st = path.stat()
            except OSError:
                continue
            out.append((path, st.st_size, st.st_mtime))
        return sorted(out, key=lambda e: e[2])

    def evict(self) -> list[Path]:
        """Remove least recently used entries until the total is within the bound."""
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = []
        for path, size, _ in entries:
            if total <= self.max_bytes:
                break
            try:
                path.unlink()
            except OSError:
                continue
            total -= size
            removed.append(path)
        return removed

    def remove(self, key: str) -> None:
        try:
            self._path(key).unlink()
        except OSError:
            pass

    def clear(self) -> int:
        """Remove every entry, and the temp files killed writers left (one another process is
        writing now stays); how many entries there were."""
        entries = self.entries()
        for path, _, _ in entries:
            try:
                path.unlink()
            except OSError:
                pass
        temp_files.sweep(temp_files.temp_paths(self.folder))
        return len(entries)

    def info(self) -> dict[str, Any]:
        """The folder, its entries and their bytes, the limit, whether the cache is on, and its
        temp files (`temp`: a temp_files.Survey)."""
        entries = self.entries()
        return {"folder": str(self.folder), "entries": len(entries), "bytes": sum(e[1] for e in entries),
                "limit": self.max_bytes, "enabled": enabled(),
                "temp": temp_files.survey(temp_files.temp_paths(self.folder))}


__all__ = ["CaptureStore", "CacheWarning", "GRAPHS_FORMAT", "storable", "folder", "enabled", "limit", "FORMAT",
           "DEFAULT_LIMIT", "ENV_DIR", "ENV_SWITCH", "ENV_LIMIT"]
