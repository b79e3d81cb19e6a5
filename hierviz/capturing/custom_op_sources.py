"""Where a graph's custom ops are registered, so that another process registers them before it
reads the graph.

A captured graph can name ops that exist only once some Python module has run: Torch-TensorRT's
lowering puts `tensorrt::conv_asym_pad` in place of a pad before a conv, transformers' MoE layers
call `transformers::grouped_mm_fallback`, a user's `torch.library.custom_op("mylib::mysin")`. A
process that reads the graph as plain data (hierviz.capturing.graph_codec: the capture cache, the
explorer's worker, a sweep's processes, Ray tasks) has torch's own ops, not these. `op_sources`
records, for each op of the graph that Python registered, the module that registers it and the
`sys.path` folder it was imported from; `register_ops` imports those modules where the op is not
registered yet (a module of torch_tensorrt through hierviz.trt, without a GPU), and raises
CustomOpUnavailable naming the op where it cannot be had: an op defined in `__main__` (a notebook
cell, the script being run) is recorded with no module (`not_importable`).

The module is found from the op's Python objects: the function `torch.library.custom_op` wrapped
(`torch._library.custom_ops.OPDEFS`), else the file its fake kernel was registered from
(`torch._library.simple_registry`), else the file the dispatcher says defined it; ops defined in
C++ (aten, prims, a loaded extension's) are not recorded.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any, Iterable

import torch
from torch._ops import OpOverload, OpOverloadPacket
from torch.fx import GraphModule

from hierviz import trt
from hierviz.errors import CustomOpUnavailable

# namespaces torch defines in every process (C++, or Python run by `import torch`)
_TORCH_OWN = frozenset({"aten", "prims"})
# torch's own files a registration passes through: they say nothing of who registered the op
_TORCH_DIR = os.path.dirname(os.path.realpath(torch.__file__))
_WRAPPERS = (os.path.join(_TORCH_DIR, "library.py"), os.path.join(_TORCH_DIR, "_library") + os.sep)
_REGISTERED_AT = re.compile(r"registered at (.+\.py):\d+")
MAIN = "__main__"

# (module, the sys.path folder it was imported from): module None where another process cannot import it
Source = tuple[str | None, str | None]


def qualified_name(target: Any) -> str | None:
    """'ns::op' of an op target (an OpOverload or OpOverloadPacket), else None."""
    if isinstance(target, OpOverload):
        return target._schema.name
    if isinstance(target, OpOverloadPacket):
        return target._qualified_op_name
    return None


def op_sources(gm: GraphModule) -> dict[str, Source]:
    """For each op of `gm` registered by Python outside torch: its qualified name -> (module,
    the folder on sys.path it was imported from); the module is None where another process
    cannot import it (`__main__`, a notebook cell, code with no file)."""
    names = {qualified_name(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    found: dict[str, Source] = {}
    files: dict[str, str] | None = None  # file -> module, made once when a file must be looked up
    for name in sorted(n for n in names if n is not None and n.split("::")[0] not in _TORCH_OWN):
        module = _defining_function_module(name)
        if module is None:
            path = _defining_file(name)
            if path is None:
                continue  # defined in C++: every process with the library has it
            files = _module_files() if files is None else files
            module = files.get(path, MAIN)
        found[name] = (None, None) if module == MAIN else (module, _import_root(module))
    return found


def not_importable(sources: dict[str, Source]) -> list[str]:
    """The ops of `sources` another process cannot register (defined in `__main__`)."""
    return [name for name, (module, _) in sources.items() if module is None]


def unavailable_text(names: Iterable[str]) -> str:
    """What to say of ops another process cannot register (the first named; how many more)."""
    names = list(names)
    more = f" (and {len(names) - 1} other custom op(s))" if len(names) > 1 else ""
    return (f"the graph's custom op {names[0]}{more} is defined in __main__ (a notebook cell or the script being "
            "run), which another process cannot import; define it in an importable module (a .py file on "
            "sys.path) to have it there")


def register_ops(sources: dict[str, Source]) -> None:
    """Register every op of `sources` this process lacks, by importing the module that defines it
    (a module of torch_tensorrt through hierviz.trt, GPU-safely); CustomOpUnavailable naming the
    op when it cannot be had."""
    missing = [name for name in sources if not registered(name)]
    lost = [name for name in missing if sources[name][0] is None]
    if lost:
        raise CustomOpUnavailable(unavailable_text(lost), op=lost[0], module=None)
    for name in missing:
        module, root = sources[name]
        assert module is not None
        _import(name, module, root)
        if not registered(name):
            raise CustomOpUnavailable(f"the graph's custom op {name} is not registered by importing {module}, "
                                      "the module that registered it when the graph was made",
                                      op=name, module=module)


def registered(name: str) -> bool:
    """Whether the op 'ns::op' is registered in this process."""
    namespace, _, op = name.partition("::")
    try:
        getattr(getattr(torch.ops, namespace), op)
    except AttributeError:
        return False
    return True


def _import(name: str, module: str, root: str | None) -> None:
    """Import `module` (from `root` when it is not found on sys.path), saying which op needs it
    when the import fails."""
    try:
        if module.split(".")[0] == "torch_tensorrt":
            _import_torch_tensorrt(name, module)
            return
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if root is None or exc.name is None or not module.startswith(exc.name) or root in sys.path:
                raise
            sys.path.append(root)  # the folder the graph's maker imported it from
            importlib.import_module(module)
    except CustomOpUnavailable:
        raise
    except Exception as exc:  # the module's own import failed: whatever it raised is said with the op
        raise CustomOpUnavailable(f"the graph's custom op {name} is registered by module {module}, which does not "
                                  f"import here ({type(exc).__name__}: {str(exc)[:200]}); make it importable "
                                  "(install it, or put its folder on sys.path)", op=name, module=module) from exc


def _import_torch_tensorrt(name: str, module: str) -> None:
    _, why = trt.load()
    if why is not None:
        raise CustomOpUnavailable(f"the graph holds Torch-TensorRT's op {name}, but {why}: install Torch-TensorRT "
                                  f"(`{trt.FIX_RTX}`) to read it", op=name, module=module)
    with trt.answer_cuda_queries():
        importlib.import_module(module)


def _defining_function_module(name: str) -> str | None:
    """The module of the function `torch.library.custom_op` made the op from, else None."""
    from torch._library.custom_ops import OPDEFS

    opdef = OPDEFS.get(name)
    fn = getattr(opdef, "_init_fn", None)
    module = getattr(fn, "__module__", None)
    return module if isinstance(module, str) else None


def _defining_file(name: str) -> str | None:
    """The Python file that registered the op's fake kernel or defined it (not torch's own
    wrappers): a path, or MAIN when Python registered it from code with no file; None for an op
    C++ defined."""
    from torch._library.simple_registry import singleton

    entry = singleton._data.get(name)
    fake = getattr(getattr(entry, "fake_impl", None), "kernel", None)
    candidates = [str(fake.source).rsplit(":", 1)[0]] if fake is not None else []
    match = _REGISTERED_AT.search(torch._C._dispatch_dump(name))
    if match:
        candidates.append(match.group(1))
    python = False
    for path in candidates:
        real = os.path.realpath(path) if os.path.exists(path) else path
        python = python or real.endswith(".py") or path.startswith("<")
        if os.path.exists(path) and not any(real == w or real.startswith(w) for w in _WRAPPERS):
            return real
    return MAIN if python or fake is not None else None


def _module_files() -> dict[str, str]:
    """The real path of every loaded module's file -> the module's name."""
    files: dict[str, str] = {}
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if isinstance(path, str):
            files.setdefault(os.path.realpath(path), name)
    return files


def _import_root(module: str) -> str | None:
    """The sys.path folder `module` was imported from (its file's folder, less its package's)."""
    mod = sys.modules.get(module)
    path = getattr(mod, "__file__", None)
    if not isinstance(path, str):
        return None
    folder = os.path.dirname(os.path.realpath(path))
    depth = module.count(".") + (1 if os.path.basename(path).startswith("__init__.") else 0)
    for _ in range(depth):
        folder = os.path.dirname(folder)
    return folder


__all__ = ["op_sources", "register_ops", "not_importable", "unavailable_text", "registered", "qualified_name",
           "MAIN", "Source"]
