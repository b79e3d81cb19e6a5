"""One compiler per backend: TensorRT, TorchInductor, and any a user registers.

A compiler turns a subgraph into a callable. Compilers that take weights as inputs
(`lifts_weights=True`, e.g. TorchInductor) are given the lifted subgraph, whose weights are
trailing placeholders, and the artifact is shared by every subgraph of that structure.
Compilers that build weights into the artifact (TensorRT engines) get the subgraph with its
weights as attributes, and the cache key then includes a digest of the weights' values.

Subgraphs that run in PyTorch (`_run_on_gpu_*`) are not compiled: they run eagerly.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from torch.fx import GraphModule

from hierviz import trt
from hierviz.errors import MeasureError

CompileFn = Callable[[GraphModule, Sequence[Any], Any, bool], Callable[..., Any]]


@dataclass(frozen=True)
class Compiler:
    """How to compile subgraphs for one backend.

    `compile(gm, example_inputs, options, persist)` returns a callable run as
    `fn(*inputs, *weights)` when `lifts_weights`, else `fn(*inputs)`. `persist` asks for an
    artifact that `save` can write to disk. `options` are the backend's settings as passed to
    `hv.measure` (e.g. `trt_settings`, given to TensorRT as checked CompilationSettings);
    `options_key(options)` turns them into part of the cache key. `version()` names the
    compiler's version (part of the key, so a disk cache is not reused across versions).
    `available(device)` is None when the backend can compile for `device`, else why not.
    `named`: `compile` also takes `name=` (the subgraph's tag, e.g. to name TensorRT engines).
    `state()` says whether a compile now is "cold" or "warm" (the backend's own disk caches exist).
    `artifacts_run_code`: loading a saved artifact runs code from it (TorchInductor's do, a user
    compiler's may; a TensorRT engine file is data), so `deploy.load` takes such artifacts from a
    folder only when told the folder is trusted.
    """

    backend: str
    compile: CompileFn
    lifts_weights: bool = True
    needs_cuda: bool = False
    save: Callable[[Any, Path], bool] | None = None
    load: Callable[[Path], Any] | None = None
    options_key: Callable[[Any], Any] = repr
    version: Callable[[], str] = lambda: torch.__version__
    available: Callable[[torch.device], str | None] = lambda device: None  # None when usable, else why not
    description: str = ""
    named: bool = False
    state: Callable[[], str] = lambda: "cold"
    artifacts_run_code: bool = True


_REGISTRY: dict[str, Compiler] = {}


def register_compiler(backend: str, compiler: Compiler | Callable[..., Callable[..., Any]], *,
                      lifts_weights: bool = True, needs_cuda: bool = False) -> Compiler:
    """Register how to compile subgraphs of `backend` (a name used in `Config.priority`).

    `compiler` is a `Compiler`, or a function `fn(gm, example_inputs) -> callable`; with
    `lifts_weights=True` (the default) `gm` takes the weights as trailing inputs and the
    callable is run as `compiled(*inputs, *weights)`; otherwise `gm` holds its weights and is
    run as `compiled(*inputs)`. Returns the registered Compiler.
    """
    if not isinstance(compiler, Compiler):
        compiler = from_function(backend, compiler, lifts_weights=lifts_weights, needs_cuda=needs_cuda)
    elif compiler.backend != backend:
        compiler = dataclasses.replace(compiler, backend=backend)
    _REGISTRY[backend] = compiler
    return compiler


def from_function(backend: str, fn: Callable[..., Callable[..., Any]], *, lifts_weights: bool = True,
                  needs_cuda: bool = False) -> Compiler:
    """A Compiler from a plain `fn(gm, example_inputs) -> callable`."""
    def compile_fn(gm: GraphModule, example_inputs: Sequence[Any], options: Any, persist: bool) -> Any:
        return fn(gm, list(example_inputs))

    name = getattr(fn, "__qualname__", type(fn).__name__)
    token = _token(fn)
    return Compiler(backend=backend, compile=compile_fn, lifts_weights=lifts_weights,
                    needs_cuda=needs_cuda, options_key=lambda options: (name, token, repr(options)),
                    description=f"user compiler {name}")


# A number per user compile function, so two functions never share cache entries (their
# names can be equal, and ids are reused once a function is freed: the functions are kept).
_TOKENS: dict[int, tuple[Any, int]] = {}


def _token(fn: Any) -> int:
    hit = _TOKENS.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    token = len(_TOKENS) + 1
    _TOKENS[id(fn)] = (fn, token)
    return token


def unregister_compiler(backend: str) -> None:
    _REGISTRY.pop(backend, None)


def get_compiler(backend: str, overrides: dict[str, Any] | None = None) -> Compiler | None:
    """The compiler for `backend`: one passed to measure, else a registered one, else None."""
    if overrides and backend in overrides:
        value = overrides[backend]
        return value if isinstance(value, Compiler) else from_function(backend, value)
    return _REGISTRY.get(backend)


def compilers() -> dict[str, Compiler]:
    """The registered compilers by backend name."""
    return dict(_REGISTRY)


# ----------------------------------------------------------------------------- TorchInductor
def perturbing(target: Any, amount: float) -> Callable[[GraphModule, Sequence[Any]], GraphModule]:
    """A compiler with a known numerical bug, for trying `hv.numerics`: it runs the subgraph
    eagerly with `amount` added to every output of the op `target` (an OpOverload).
    `register_compiler("buggy", perturbing(torch.ops.aten.gelu.default, 0.05))`."""

    def compile_perturbed(gm: GraphModule, example_inputs: Sequence[Any]) -> GraphModule:
        for n in list(gm.graph.nodes):
            if n.op == "call_function" and n.target is target:
                with gm.graph.inserting_after(n):
                    bumped = gm.graph.call_function(torch.ops.aten.add.Tensor, (n, amount))
                n.replace_all_uses_with(bumped, delete_user_cb=lambda u, new=bumped: u is not new)
        gm.recompile()
        return gm

    return compile_perturbed


def _inductor_compile(gm: GraphModule, example_inputs: Sequence[Any], options: Any, persist: bool) -> Any:
    import torch._inductor

    opts = dict(options or {})
    inputs = list(example_inputs)
    standalone = getattr(torch._inductor, "standalone_compile", None)
    dims = gm.meta.get("hierviz_dynamic_dims")
    if dims and standalone is not None:  # a dynamic capture: compile for every size, not the example's
        mode, fakes = _symbolic_inputs(inputs, dims)
        return standalone(gm, fakes, dynamic_shapes="from_example_inputs", fake_mode=mode, options=opts)
    if persist and standalone is not None:
        return standalone(gm, inputs, dynamic_shapes="from_example_inputs", options=opts)
    return torch._inductor.compile(gm, inputs, options=opts or None)


def _symbolic_inputs(inputs: Sequence[Any], dims: Sequence[Sequence[int]]) -> tuple[Any, list[Any]]:
    """Fake copies of `inputs` in a fresh fake mode, with the dimensions `dims[i]` of input i
    symbolic (the dynamic dimensions of the capture) and every other dimension fixed."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    mode = FakeTensorMode(shape_env=ShapeEnv())
    fakes = []
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            fakes.append(x)
            continue
        dynamic = set(dims[i]) if i < len(dims) else set()
        sizes = [DimDynamic.DYNAMIC if d in dynamic else DimDynamic.STATIC for d in range(x.dim())]
        fakes.append(mode.from_tensor(x, symbolic_context=StatelessSymbolicContext(dynamic_sizes=sizes)))
    return mode, fakes


def _inductor_save(artifact: Any, path: Path) -> bool:
    save = getattr(artifact, "save", None)
    if save is None:
        return False
    save(path=str(path), format="binary")
    return True


def _inductor_load(path: Path) -> Any:
    from torch._inductor.standalone_compile import CompiledArtifact

    return CompiledArtifact.load(path=str(path), format="binary")


def _inductor_state() -> str:
    """'warm' when TorchInductor's FX graph cache is on and its directory holds entries."""
    try:
        import torch._inductor.config as config
        from torch._inductor.runtime.cache_dir_utils import cache_dir

        folder = Path(cache_dir()) / "fxgraph"
        return "warm" if config.fx_graph_cache and folder.is_dir() and any(folder.iterdir()) else "cold"
    except (ImportError, AttributeError, OSError):  # older torch, or an unreadable folder: unknown means cold
        return "cold"


def _inductor_options_key(options: Any) -> Any:
    if options is None:
        return None
    if not isinstance(options, dict):
        raise MeasureError(f"inductor_options must be a dict of torch._inductor.config settings, "
                           f"not {type(options).__name__}")
    return tuple(sorted((str(k), repr(v)) for k, v in options.items()))


INDUCTOR = Compiler(
    backend="inductor", compile=_inductor_compile, lifts_weights=True, needs_cuda=False,
    save=_inductor_save, load=_inductor_load, options_key=_inductor_options_key, state=_inductor_state,
    description="torch._inductor.compile on the subgraph with its weights as inputs",
)


# ----------------------------------------------------------------------------- TensorRT
def _trt_compile(gm: GraphModule, example_inputs: Sequence[Any], options: Any, persist: bool,
                 name: str = "") -> Any:
    """The subgraph's TensorRT module: the engine part.build() kept for this very subgraph and
    settings when there is one (hierviz.building.engine_store), else converted and built now."""
    from hierviz.building.engine_store import stored_engine

    stored = stored_engine(gm, options)
    if stored is not None:
        engine, runtime = stored
        return trt.engine_module(engine, runtime, settings=options, name=name)
    return trt.compile_submodule(gm, settings=options, name=name)


def _trt_save(artifact: Any, path: Path) -> bool:
    trt.save_engine(artifact, path)
    return True


def _trt_load(path: Path) -> Any:
    return trt.load_engine(path)


def _trt_state() -> str:
    return trt.build_state()


def _trt_options_key(options: Any) -> Any:
    return trt.settings_key(options)


@functools.lru_cache(maxsize=1)
def _trt_version() -> str:
    """The versions in TensorRT cache keys (fixed for the process: asked once)."""
    info = trt.info()
    return (f"torch_tensorrt {info.version} ({info.variant}); TensorRT {info.tensorrt_version}; "
            f"torch {torch.__version__}")


def _trt_available(device: torch.device) -> str | None:
    return trt.info(device).reason


TENSORRT = Compiler(
    backend="tensorrt", compile=_trt_compile, lifts_weights=False, needs_cuda=True,
    save=_trt_save, load=_trt_load, options_key=_trt_options_key, version=_trt_version,
    available=_trt_available, named=True, state=_trt_state, artifacts_run_code=False,
    description="Torch-TensorRT construct_submodule_inputs + convert_module (weights in the engine)",
)

register_compiler("inductor", INDUCTOR)
register_compiler("tensorrt", TENSORRT)


__all__ = ["Compiler", "perturbing", "register_compiler", "unregister_compiler", "get_compiler", "compilers",
           "from_function", "INDUCTOR", "TENSORRT"]
