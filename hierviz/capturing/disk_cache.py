"""The on-disk cache of captures: a captured graph kept under the user's cache folder, keyed by
everything that can change it, so that a new process (a notebook restart, a CLI call) does not
export and lower the same model again.

The key (`capture_key`) is a hash of: the class and `forward` source of every submodule (and
the contents of the file each class is defined in), their other attributes (a transformers
config's flags, say), their hooks, the values of every parameter, buffer and tensor attribute,
the train/eval flags, the example inputs' structure, shapes and dtypes (and non-tensor
values), `dynamic_shapes`, the versions of torch and hierviz, and the installed Torch-TensorRT
distribution (its name and version, read from its metadata: torch_tensorrt is not imported).
A model it cannot describe (a parameter on the meta device, a forward with no code) is not
cached. `hierviz.capturing.aten_capture` checks a cached graph before using it: the model traced
on fake tensors does the computation it did when the entry was kept (an entry records that
digest, and `graph_digest` of its graph), or else the model's outputs agree with the graph's.
An entry holds the model's weights as references (their names in the model), not their bytes.

torch.compile's captures (`hv.capture(..., ir="torch_compile")`: several graphs, their first
calls' values and what the capture says of them) are kept the same way (`save_graphs` /
`load_graphs`), under the same key with "torch_compile" in its inputs part, in the same folder.

`CaptureStore` keeps one file per key (the graph as plain data, `hierviz.capturing.graph_codec`), written
atomically (a temporary file, then `os.replace`, so that no process reads half an entry),
bounded in size with the least recently used entries removed first (`limit()`: a quarter of
the disk's free space, 2-20 GiB). The folder
is `$HIERVIZ_CACHE_DIR`, else `$XDG_CACHE_HOME/hierviz`, else `~/.cache/hierviz`; `HIERVIZ_CACHE=0`
(or `hv.capture(..., cache=False)`) turns the cache off. Entries are pickles: only a folder
the user owns should be used.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import pickle
import tempfile
import types
import warnings
from pathlib import Path
from typing import Any

import torch

from hierviz import trt
from hierviz.errors import user_stacklevel
from hierviz.foundation.digests import digest, tensor_digest, tensor_digests
from hierviz.capturing.graph_codec import NOT_PICKLABLE, fetch_attr, pack_graph, unpack_graph
from hierviz.support.support_key import plain
from hierviz.version import __version__

FORMAT = "hierviz-capture/2"  # /2: the modules moved into packages (pickled class paths changed)
GRAPHS_FORMAT = "hierviz-graphs-capture/2"  # torch.compile's capture: several graphs and their values
DEFAULT_LIMIT = 2 * 1024**3  # bytes: the least the cache may hold (`limit`)
ENV_DIR, ENV_SWITCH, ENV_LIMIT = "HIERVIZ_CACHE_DIR", "HIERVIZ_CACHE", "HIERVIZ_CACHE_LIMIT"
SUFFIX = ".capture"
_OFF = {"0", "false", "no", "off"}
_DEPTH = 4  # how deep a submodule's attributes are described


# what reading a damaged, foreign or outdated entry raises: the file (OSError), pickle (truncated:
# EOFError; a class moved or gone: ImportError, AttributeError; UnpicklingError), torch's tensor
# storage (RuntimeError), and an entry of another shape (ValueError, KeyError, TypeError, IndexError)
UNREADABLE: tuple[type[Exception], ...] = (OSError, EOFError, pickle.UnpicklingError, ImportError, AttributeError,
                                           RuntimeError, ValueError, KeyError, TypeError, IndexError)
# what writing an entry raises: a full disk or a read-only folder (OSError), a value that does not
# pickle (graph_codec.NOT_PICKLABLE)
UNWRITABLE: tuple[type[Exception], ...] = (OSError, *NOT_PICKLABLE)


class CacheWarning(UserWarning):
    """A capture-cache entry could not be used (it is captured again)."""


def folder() -> Path:
    """Where captures are kept: $HIERVIZ_CACHE_DIR, else the user's cache folder + /hierviz."""
    explicit = os.environ.get(ENV_DIR)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hierviz"


def enabled(cache: bool = True) -> bool:
    """Whether captures are cached: `cache` and not HIERVIZ_CACHE=0."""
    return bool(cache) and os.environ.get(ENV_SWITCH, "1").strip().lower() not in _OFF


def limit() -> int:
    """The size bound in bytes of the capture cache, and of the build cache (each): $HIERVIZ_CACHE_LIMIT
    when it is a whole number of bytes; else a quarter of the free space on the cache folder's disk,
    at least DEFAULT_LIMIT (2 GiB) and at most 20 GiB, so that a billion-parameter engine (2.2 GB in
    bf16) is kept with room for others wherever the disk has 10 GB free. Read when a store opens."""
    explicit = os.environ.get(ENV_LIMIT, "").strip()
    if explicit.isdecimal():
        return int(explicit)
    import shutil

    where = folder()
    while not where.exists() and where.parent != where:  # the folder may not be made yet
        where = where.parent
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return DEFAULT_LIMIT
    return max(DEFAULT_LIMIT, min(free // 4, 20 * 1024**3))


# ---------------------------------------------------------------------------- the key
class _NotCacheable(Exception):
    """The model has something the key cannot describe."""


def capture_key(model: torch.nn.Module, inputs: Any, dynamic_shapes: Any) -> str | None:
    """The cache key of capturing `model` with `inputs` (a hashable description of the example
    inputs) and `dynamic_shapes` (the same of those), or None when the model cannot be keyed."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr((FORMAT, __version__, torch.__version__, lowering(), inputs, dynamic_shapes)).encode())
    _hash_side_by_side(model)
    try:
        seen: dict[int, str] = {}
        memo: dict[int, str] = {}
        for name, module in model.named_modules(remove_duplicate=False):
            h.update(repr((name, module.training, _class_key(type(module)),
                           _describe(_renumbered_hooks(vars(module)), _DEPTH, memo))).encode())
            for attr, value in _tensors(module):
                h.update(repr((name, attr, _tensor_digest(value, seen))).encode())
    except _NotCacheable:
        return None
    return h.hexdigest()


def _hash_side_by_side(model: torch.nn.Module) -> None:
    """Take the digests of the model's plain tensors on a few threads (`tensor_digests`: a 1.1B
    model's 2.2 GB in about half the time); the key reads them back. A tensor that cannot be
    hashed is left to the key, which says the model is not cacheable."""
    plain = {id(t): t for module in model.modules() for _, t in _tensors(module)
             if t.device.type != "meta" and t.layout == torch.strided}
    try:
        tensor_digests(plain.values())
    except (RuntimeError, TypeError, ValueError):  # (the key hashes each again and says which fails)
        pass


def lowering() -> tuple[str, str] | str:
    """The lowering hierviz runs, named without importing torch_tensorrt (5 s): the installed
    Torch-TensorRT distribution (name, version), whose lowering and default settings capture
    runs, or torch's own decompositions without one."""
    return trt.installed_distribution() or "torch decompositions"


_CLASS_KEYS: dict[type, str] = {}
_FILE_DIGESTS: dict[tuple[str, float, int], str] = {}


def _class_key(cls: type) -> str:
    """The class's qualified name, its forward's source and the digest of the file it is in."""
    known = _CLASS_KEYS.get(cls)
    if known is None:
        forward: Any = getattr(cls, "forward", None)  # None or not a function: getsource's TypeError
        try:
            source = inspect.getsource(forward)
        except (OSError, TypeError):
            code = getattr(forward, "__code__", None)
            if code is None:
                raise _NotCacheable(f"{cls.__qualname__}.forward has no source or code") from None
            source = repr(plain(code))  # no memory address in it (a nested lambda's code object has one)
        known = _CLASS_KEYS[cls] = f"{cls.__module__}.{cls.__qualname__}|{source}|{_file_digest(cls)}"
    return known


def _file_digest(cls: type) -> str:
    try:
        path = inspect.getsourcefile(cls) or ""
    except (OSError, TypeError):  # a class defined in `python -c`, a builtin
        return ""
    return file_digest(path)


def file_digest(path: str) -> str:
    """The digest of a source file's contents ('' when it cannot be read), kept per (path,
    mtime, size) for the process."""
    try:
        stat = os.stat(path)
    except (OSError, TypeError, ValueError):
        return ""
    key = (path, stat.st_mtime, stat.st_size)
    if key not in _FILE_DIGESTS:
        with open(path, "rb") as f:
            _FILE_DIGESTS[key] = hashlib.blake2b(f.read(), digest_size=16).hexdigest()
    return _FILE_DIGESTS[key]


def _renumbered_hooks(state: dict[str, Any]) -> dict[str, Any]:
    """A module's attributes with its hook dicts (`_forward_hooks`, `_forward_hooks_with_kwargs`,
    ...) keyed by each hook's place among the module's hooks instead of its handle id, a
    counter of every hook made in the process so far."""
    hooks = [name for name, value in state.items() if "hooks" in name and isinstance(value, dict)]
    ids = sorted({k for name in hooks for k in state[name] if isinstance(k, int)})
    if not ids:
        return state
    place = {handle: n for n, handle in enumerate(ids)}
    return {**state, **{name: {place.get(k, k): v for k, v in state[name].items()} for name in hooks}}


# described elsewhere; and names with "hash" in them are process-specific (a transformers
# GenerationConfig's _original_object_hash is hash() of a string, salted per process)
_SKIPPED = {"_parameters", "_buffers", "_modules", "training"}
_PLAIN = (int, float, bool, str, bytes, type(None), complex)


def _describe(value: Any, depth: int, memo: dict[int, str]) -> Any:
    """A text description of a module attribute that is equal in every process for equal
    values: scalars by value, containers item by item, functions and classes by name, hooks
    by their functions, other objects by their attributes (to `depth`); tensors are hashed
    separately (`_tensors`), so only their place is described here."""
    if isinstance(value, _PLAIN):
        return repr(value)
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, torch.nn.Module):
        return "module"
    if isinstance(value, (torch.dtype, torch.device, torch.memory_format, torch.layout)):
        return str(value)
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(type(value)))}"
    if depth <= 0:
        return type(value).__qualname__
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, dict):
        out = repr(sorted((str(k), _describe(v, depth - 1, memo)) for k, v in value.items()
                          if str(k) not in _SKIPPED and "hash" not in str(k).lower()))
    elif isinstance(value, (list, tuple)):
        out = repr([_describe(v, depth - 1, memo) for v in value])
    elif isinstance(value, (set, frozenset)):
        out = repr(sorted(_describe(v, depth - 1, memo) for v in value))
    elif hasattr(value, "__dict__"):
        out = f"{type(value).__qualname__}{_describe(vars(value), depth - 1, memo)}"
    else:
        out = type(value).__qualname__
    memo[id(value)] = out
    return out


def _tensors(module: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    """The module's own parameters, buffers and tensor attributes."""
    found: list[tuple[str, torch.Tensor]] = [(k, v) for k, v in module._parameters.items() if v is not None]
    found += [(k, v) for k, v in module._buffers.items() if v is not None]
    found += [(k, v) for k, v in vars(module).items() if isinstance(v, torch.Tensor)]
    return found


def _tensor_digest(t: torch.Tensor, seen: dict[int, str]) -> str:
    if id(t) in seen:  # a tied weight: hashed once
        return seen[id(t)]
    if t.device.type == "meta" or t.layout != torch.strided:
        raise _NotCacheable("a tensor without plain values")
    try:
        digest = tensor_digest(t)  # once per process: the build key takes the same one
    except Exception as exc:
        raise _NotCacheable(f"a tensor whose values cannot be read: {exc}") from exc
    seen[id(t)] = out = f"{t.dtype}{tuple(t.shape)}{tuple(t.stride())}{digest}"
    return out


def graph_digest(gm: torch.fx.GraphModule) -> str:
    """A digest of what the graph computes from: its code and every attribute it reads (a tensor
    by its values, stride and device: `tensor_digest`, remembered per process, so the model's
    own weights, hashed for the key, are not hashed again). Equal for a graph and its copy read
    back from an entry; a weight or a node changed in the entry changes it."""
    parts: list[Any] = [gm.code]
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = fetch_attr(gm, str(node.target))
            if isinstance(value, torch.Tensor):
                parts.append((str(node.target), tuple(value.stride()), value.device.type, tensor_digest(value)))
            else:
                parts.append((str(node.target), type(value).__qualname__, repr(value)))
    return digest(parts)


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


_MODEL = "hierviz-model-tensor"  # an attrs value ("hierviz-model-tensor", name, shared): the model's tensor


def _model_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    named = [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]
    return dict(named)


def _referenced(attrs: dict[str, Any], model: torch.nn.Module | None) -> dict[str, Any]:
    """The graph's tensors, those equal to one of the model's (same name, or same storage) as
    references: shared with the model when the graph shares it, as a fresh capture does."""
    if model is None:
        return attrs
    mine = _model_tensors(model)
    by_storage = {(t.data_ptr(), t.shape, t.stride(), t.dtype): name for name, t in mine.items() if t.numel()}
    out = {}
    for path, value in attrs.items():
        out[path] = value
        if not isinstance(value, torch.Tensor) or not value.numel():
            continue
        name = by_storage.get((value.data_ptr(), value.shape, value.stride(), value.dtype))
        shared = name is not None
        if name is None and path in mine:
            theirs = mine[path]
            if theirs.shape == value.shape and theirs.dtype == value.dtype and torch.equal(theirs, value):
                name = path
        if name is not None:
            out[path] = (_MODEL, name, shared, isinstance(value, torch.nn.Parameter), value.requires_grad)
    return out


def _resolved(attrs: dict[str, Any], model: torch.nn.Module | None) -> dict[str, Any]:
    """The stored tensors, references taken from the model (a copy where the capture had one)."""
    refs = {p: v for p, v in attrs.items() if isinstance(v, tuple) and len(v) == 5 and v[0] == _MODEL}
    if not refs:
        return attrs
    if model is None:
        raise ValueError("the entry refers to the model's weights, and no model was given")
    mine = _model_tensors(model)
    out = dict(attrs)
    for path, (_, name, shared, parameter, grad) in refs.items():
        tensor = mine[name].detach() if not shared else mine[name]
        if not shared:
            tensor = tensor.clone()
        if parameter and not isinstance(tensor, torch.nn.Parameter):
            tensor = torch.nn.Parameter(tensor, requires_grad=grad)
        out[path] = tensor
    return out


# ---------------------------------------------------------------------------- the store
class CaptureStore:
    """The cache's folder of entries (one file per key), bounded by `limit` bytes."""

    def __init__(self, where: Path | None = None, max_bytes: int | None = None) -> None:
        self.folder = (where if where is not None else folder()) / "captures"
        self.max_bytes = limit() if max_bytes is None else max_bytes

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
        An entry that cannot be read is removed, with one CacheWarning."""
        try:
            entry = self._entry(key, FORMAT)
            gm = unpack_graph(dict(entry["graph"], attrs=_resolved(entry["graph"]["attrs"], model)))
        except FileNotFoundError:
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
        shared them). An entry that cannot be read is removed, with one CacheWarning."""
        try:
            entry = self._entry(key, GRAPHS_FORMAT)
            graphs = [unpack_graph(dict(g, attrs=_resolved(g["attrs"], model))) for g in entry["graphs"]]
            tensors = _resolved(entry["tensors"], model)
            payload = entry["payload"]
        except FileNotFoundError:
            return None
        except UNREADABLE as exc:  # any unreadable entry is captured again
            self.unreadable(key, exc)
            return None
        self._used(key)
        return graphs, tensors, payload

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
                graph["attrs"] = _referenced(graph["attrs"], model)
                packed.append(graph)
            entry = {"format": GRAPHS_FORMAT, "key": key, "graphs": packed,
                     "tensors": _referenced(tensors, model), "payload": payload}
            return self._write(key, entry)
        except UNWRITABLE:  # a graph or value that does not pickle, a full disk: captured again next time
            return False

    def _write(self, key: str, entry: dict) -> bool:
        """Write `entry` under `key` atomically (a temporary file renamed), then evict beyond the bound."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=SUFFIX)
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
            graph["attrs"] = _referenced(graph["attrs"], model)
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
            if path.name.startswith(".tmp-"):
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
        """Remove every entry; how many there were."""
        entries = self.entries()
        for path, _, _ in entries:
            try:
                path.unlink()
            except OSError:
                pass
        return len(entries)

    def info(self) -> dict[str, Any]:
        entries = self.entries()
        return {"folder": str(self.folder), "entries": len(entries), "bytes": sum(e[1] for e in entries),
                "limit": self.max_bytes, "enabled": enabled()}


__all__ = ["CaptureStore", "CacheWarning", "capture_key", "file_digest", "graph_digest", "GRAPHS_FORMAT", "storable",
           "folder", "enabled", "limit", "FORMAT", "DEFAULT_LIMIT", "ENV_DIR", "ENV_SWITCH", "ENV_LIMIT"]
