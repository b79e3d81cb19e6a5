"""A repro's files: `repro.pt2` (the part as an ExportedProgram), `repro.py` (torch and
torch_tensorrt only: compiles it and says whether the failure reproduces) and `README.md`
(the issue text), and running `repro.py` in a fresh process (`Repro.save`).

repro.py's exit status: 1 the failure reproduces (same stage, exception class and masked
error line, docs/repro.md), 0 it builds (on a machine without a GPU: the engine was built and
only loading it failed), 2 it failed some other way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import optimization_hint

from hierviz import trt
from hierviz.building.graph_run import OP_ERRORS, source_line
from hierviz.building.reduction import call_nodes, part_of
from hierviz.building.repro_outside import SOURCE as OUTSIDE_SOURCE
from hierviz.building.repro_outside import outside, results
from hierviz.building.repro_shapes import ReproShapes
from hierviz.errors import ConfigError
from hierviz.foundation.error_text import first_line
from hierviz.foundation.opnames import CALLABLE_OPS

WEIGHTS = ("real", "random")
# what torch.export and Torch-TensorRT's lowering raise on a part they cannot take (torch.export's
# refusals of a Dim are RuntimeErrors): what running an op raises, a missing attribute or key
EXPORT_ERRORS: tuple[type[Exception], ...] = (*OP_ERRORS, LookupError, AttributeError)
RUN_LIMIT_S = 900  # a fresh process imports torch_tensorrt (~10 s) and builds one small engine


SIZE = "size"  # example_inputs' dtype of a placeholder that is a size (an int): its one number is its value


def example_inputs(gm: torch.fx.GraphModule) -> list[tuple[list[int], str]]:
    """(shape, dtype) of each placeholder, from its `meta['val']` (a dynamic size at its example's
    size); a size placeholder (an int) is ([its example's value], SIZE)."""
    out: list[tuple[list[int], str]] = []
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        val = n.meta.get("val")
        if isinstance(val, torch.Tensor):
            shape = [optimization_hint(d) for d in val.shape]
            out.append((shape, str(val.dtype).removeprefix("torch.")))
        elif isinstance(val, (int, torch.SymInt)):
            out.append(([optimization_hint(val)], SIZE))
        else:
            out.append(([], "int64"))
    return out


def made_inputs(spec: list[tuple[list[int], str]]) -> tuple[Any, ...]:
    """Values of those shapes and dtypes: floats random normal, everything else zeros (a valid
    index); a size its number."""
    gen = torch.Generator().manual_seed(0)
    made: list[Any] = []
    for shape, dtype in spec:
        if dtype == SIZE:
            made.append(int(shape[0]))
            continue
        dt = getattr(torch, dtype)
        made.append(torch.randn(shape, generator=gen, dtype=dt) if dt.is_floating_point
                    else torch.zeros(shape, dtype=dt))
    return tuple(made)


class _Part(torch.nn.Module):
    """The part as a module torch.export traces: its GraphModule called on the inputs. The inputs
    named in `made` pass through the stand-in of the ops outside the engine first, the outputs
    named in `used` after (repro_outside)."""

    def __init__(self, gm: torch.fx.GraphModule, made: tuple[str, ...] = (), used: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.part = gm
        names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
        self.made = frozenset(i for i, name in enumerate(names) if name in made)
        self.used = frozenset(i for i, name in enumerate(results(gm)) if name in used)
        (out,) = [n for n in gm.graph.nodes if n.op == "output"]
        self.one = not isinstance(out.args[0], (tuple, list))  # its graph returns one value, not a tuple

    def forward(self, *args: Any) -> Any:
        args = tuple(outside(a) if i in self.made else a for i, a in enumerate(args))
        out = self.part(*args)
        values = (out,) if self.one else tuple(out)
        values = tuple(outside(v) if i in self.used else v for i, v in enumerate(values))
        if "taken" not in self.part.meta:  # not made by part_of: its outputs as its graph returns them
            return values[0] if self.one else values
        taken = self.part.meta["taken"]
        picked = tuple(v if pick is None else tuple(v[i] for i in pick) for v, pick in zip(values, taken))
        return picked[0] if len(picked) == 1 else picked


def _randomized(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of `gm` whose weights are random, of the same shapes and dtypes (floats normal with
    std 0.02, others zeros); `gm`'s own weights are untouched."""
    fresh = part_of(gm, call_nodes(gm))
    assert fresh is not None  # a part of all of a part's nodes is that part
    gen = torch.Generator().manual_seed(0)
    for name, value in list(fresh.named_parameters()) + list(fresh.named_buffers()):
        owner_name, _, leaf = name.rpartition(".")
        owner = fresh.get_submodule(owner_name) if owner_name else fresh
        new = (torch.randn(value.shape, generator=gen, dtype=value.dtype) * 0.02 if value.dtype.is_floating_point
               else torch.zeros_like(value))
        if isinstance(value, torch.nn.Parameter):
            setattr(owner, leaf, torch.nn.Parameter(new, requires_grad=value.requires_grad))
        else:
            owner.register_buffer(leaf, new)
    fresh.meta["taken"] = gm.meta.get("taken")
    return fresh


def _module(gm: torch.fx.GraphModule, weights: str, made: tuple[str, ...] = (), used: tuple[str, ...] = ()) -> _Part:
    if weights not in WEIGHTS:
        raise ConfigError(f"Repro.save(weights=...) is 'real' (the model's weights) or 'random' (random ones of the "
                          f"same shapes and dtypes, for weights you cannot share), not {weights!r}.")
    return _Part(_randomized(gm) if weights == "random" else gm, made, used)


def exported(gm: torch.fx.GraphModule, weights: str) -> torch.export.ExportedProgram:
    """`gm` exported with torch.export on inputs made from its placeholders (static: at the
    example's sizes), with its weights or random ones."""
    return torch.export.export(_module(gm, weights), made_inputs(example_inputs(gm)))


def exported_keeping_dims(gm: torch.fx.GraphModule, weights: str, shapes: ReproShapes, made: tuple[str, ...] = (),
                          used: tuple[str, ...] = ()) -> tuple[torch.export.ExportedProgram, str]:
    """(`gm` exported with its dynamic dimensions as `shapes` says them, why it holds static
    shapes instead: '' when it kept them or had none). Where torch.export refuses the Dims (the
    ops constrain a size more than its range), the part is exported at the example's sizes. The
    inputs named in `made` and the outputs named in `used` pass through `hierviz_repro::outside`
    (repro_outside)."""
    module = _module(gm, weights, made, used)
    inputs = made_inputs(example_inputs(gm))
    if shapes.dynamic_shapes is None:
        return torch.export.export(module, inputs), ""
    try:
        return torch.export.export(module, inputs, dynamic_shapes=(shapes.dynamic_shapes,)), ""
    except EXPORT_ERRORS as exc:
        said = " ".join(first_line(exc).split())
        why = f"torch.export could not keep its dynamic dimensions ({said[:300]})"
    return torch.export.export(module, inputs), why


def node_lines(gm: torch.fx.GraphModule) -> list[str]:
    """One Markdown line per call node: its name, op and the user's line that made it."""
    lines = []
    for n in gm.graph.nodes:
        if n.op in CALLABLE_OPS:
            where = source_line(n)
            op = n.target if isinstance(n.target, str) or hasattr(n.target, "_schema") else \
                f"{getattr(n.target, '__module__', '')}.{getattr(n.target, '__name__', n.target)}"
            lines.append(f"- `{n.name}`: `{op}`" + (f", from `{where}`" if where else ""))
    return lines


def versions() -> dict[str, str]:
    """torch's, Torch-TensorRT's and TensorRT's versions here, read from their metadata."""
    dist = trt.installed_distribution()
    return {"torch": torch.__version__, "torch_tensorrt": f"{dist[0]} {dist[1]}" if dist else "not installed",
            "TensorRT": trt.library_version() or "not installed"}


SCRIPT = '''"""Reproduces a Torch-TensorRT failure: {headline}.

Run: python repro.py   (next to repro.pt2). {exits} Needs only torch and torch_tensorrt.
"""

import importlib.metadata
import logging
import pathlib
import re
import sys
import traceback

import torch

# (stage, exception class, error line with node names, numbers and addresses masked): reproduced when the
# stage and class are these and every word of the line is in what Torch-TensorRT and TensorRT said
WANTED = {wanted}
INPUTS = {inputs}  # (shape, dtype) of each input at the example's sizes; a size (an int): ([value], "size")
SETTINGS = {settings}
{preamble}

def answer_cuda_queries():
    """Without a GPU, Torch-TensorRT's import and settings ask torch.cuda about the device: answer
    as an ordinary data-centre GPU would, so it converts and builds on the CPU (TensorRT-RTX)."""
    if torch.cuda.is_available():
        return
    torch.cuda.get_device_capability = lambda device=None: (8, 0)
    torch.cuda.current_device = lambda: 0
    torch.cuda.device_count = lambda: 1
    torch.cuda.mem_get_info = lambda device=None: (32 << 30, 32 << 30)


class Errors(logging.Handler):
    """TensorRT's errors, as Torch-TensorRT logs them."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.lines = []

    def emit(self, record):
        if record.name.startswith("torch_tensorrt"):
            self.lines.append(" ".join(record.getMessage().split()))


def compared(line):
    """The words of an error line to be said again: a TensorRT layer's module path ("[model.layers.#.mlp/")
    left out, as the saved program's modules are not the model's."""
    return re.findall(r"[A-Za-z_]\\w+", re.sub(r"(?<=\\[)[\\w.#<>]+/", "", line))


def masked(text, names):
    for name in sorted(set(names), key=len, reverse=True):
        text = re.sub(r"(?<![\\w.])" + re.escape(name) + r"(?![\\w])", "<node>", text)
    return re.sub(r"\\d+", "#", re.sub(r"0x[0-9a-fA-F]+", "<address>", text))


def version(*names):
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return "not installed"


def loaded():
    """torch_tensorrt imported (CUDA queries answered first), the versions printed, the saved
    program and inputs of its shapes and dtypes."""
    answer_cuda_queries()
    import torch_tensorrt

    print("torch", torch.__version__, "| torch_tensorrt", torch_tensorrt.__version__, "| TensorRT",
          version("tensorrt_rtx", "tensorrt", "tensorrt_cu13", "tensorrt_cu12"))
    ep = torch.export.load(str(pathlib.Path(__file__).with_name("repro.pt2")))
    gen = torch.Generator().manual_seed(0)
    inputs = [shape[0] if dtype == "size" else torch.randn(shape, generator=gen, dtype=getattr(torch, dtype))
              if getattr(torch, dtype).is_floating_point else torch.zeros(shape, dtype=getattr(torch, dtype))
              for shape, dtype in INPUTS]
    return torch_tensorrt, ep, inputs


{main}
if __name__ == "__main__":
    try:
        code = main()
    except Exception:
        traceback.print_exc()
        print("repro.py failed before Torch-TensorRT compiled the program.")
        code = 2
    sys.exit(code)
'''


COMPILE_EXITS = ("Exit status 1: the failure reproduces; 0: it builds (on a machine without a\n"
                 "GPU: the engine was built, and only loading it needed a GPU); 2: it failed another way.")
COMPILE_MAIN = '''def main():
    torch_tensorrt, ep, inputs = loaded()
    errors = Errors()
    logging.getLogger().addHandler(errors)
    try:
        torch_tensorrt.dynamo.compile(ep, inputs, **SETTINGS)
    except Exception as exc:
        if not torch.cuda.is_available() and any("deserializeCudaEngine" in e for e in errors.lines):
            print("It builds: the engine was built, and loading it failed for lack of a GPU.")
            return 0
        head = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        head = re.sub(r"<(?:[\\w.]+\\.)?(\\w+) object at 0x[0-9a-fA-F]+>", r"<\\1>", head)
        if isinstance(exc, RuntimeError) and "build_serialized_network" in head:
            stage = "build"
            said = [e for e in errors.lines if "Exception" in e or "CHECK" in e or "Error Code" in e] or errors.lines
            line = said[-1][:400] if said else head
        else:
            stage, line = "convert", (type(exc).__name__ + ": " + head if head else type(exc).__name__)
        names = [n.name for n in ep.graph.nodes]
        # a conversion's line starts with its class; pybind says what it was invoked with lines below the first
        seen = masked(" ".join([line, str(exc), *errors.lines]), names)
        words = compared(WANTED[2])  # a line hierviz cut is kept to its last whole word
        traceback.print_exc()
        print(f"Failed at {stage} with {line}" if stage == "convert" else f"Failed at {stage} with "
              f"{type(exc).__name__}: {line}")
        if (stage, type(exc).__name__) == WANTED[:2] and all(w.lower() in seen.lower() for w in words):
            print("Reproduced: the same failure.")
            return 1
        print(f"Failed another way: expected {WANTED}")
        return 2
    print("It builds.")
    return 0
'''

LOWERING_EXITS = ("Exit status 1: Torch-TensorRT's lowering makes a graph that fails in PyTorch\n"
                  "the same way; 0: the lowered graph runs; 2: it failed another way.")
LOWERING_MAIN = '''def main():
    torch_tensorrt, ep, inputs = loaded()
    from torch_tensorrt.dynamo import CompilationSettings, lowering

    # Torch-TensorRT's lowering, as torch_tensorrt.dynamo.compile runs it before partitioning
    settings = CompilationSettings()
    if not torch.cuda.is_available():  # its decompositions allocate on its default device: the CPU here
        from torch_tensorrt.dynamo.lowering import _decompositions
        _decompositions.default_device = lambda: torch.device("cpu")
    ep = lowering.pre_export_lowering(ep, settings)
    ep = ep.run_decompositions(lowering.get_decompositions(settings.enable_experimental_decompositions))
    gm = lowering.post_lowering(ep.module(), settings)
    print(gm.code)
    try:
        with torch.no_grad():
            gm(*inputs)
    except Exception as exc:
        head = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        line = type(exc).__name__ + ": " + head if head else type(exc).__name__
        names = [n.name for n in gm.graph.nodes]
        words = compared(WANTED[2])
        traceback.print_exc()
        print(f"The lowered graph failed in PyTorch with {line}")
        if type(exc).__name__ == WANTED[1] and all(w in masked(line, names) for w in words):
            print("Reproduced: the same failure.")
            return 1
        print(f"Failed another way: expected {WANTED}")
        return 2
    print("The lowered graph runs.")
    return 0
'''


def script(headline: str, wanted: tuple[str, str, str], gm: torch.fx.GraphModule, settings: dict,
           lowering: bool = False, outside: bool = False) -> str:
    """repro.py's text for this part: what it should fail with, its inputs and the compile's settings;
    `lowering`: it lowers the program and runs it in PyTorch (a lowering's failure) instead of compiling it;
    `outside`: repro.pt2 calls `hierviz_repro::outside`, which repro.py defines before loading it."""
    main, exits = (LOWERING_MAIN, LOWERING_EXITS) if lowering else (COMPILE_MAIN, COMPILE_EXITS)
    return SCRIPT.format(headline=headline.replace('"""', "'''"), wanted=repr(wanted), main=main, exits=exits,
                         inputs=json.dumps(example_inputs(gm)), settings=repr(settings),
                         preamble=OUTSIDE_SOURCE if outside else "")


def run_script(folder: Path) -> tuple[int, str]:
    """(exit status, output) of repro.py run in a fresh Python; the output also goes to repro.log."""
    try:
        done = subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True, text=True,
                              timeout=RUN_LIMIT_S)
        code, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        code, text = -1, f"repro.py ran past {RUN_LIMIT_S} s and was stopped: {exc}"
    (folder / "repro.log").write_text(text)
    return code, text


__all__ = ["EXPORT_ERRORS", "SIZE", "WEIGHTS", "example_inputs", "exported", "exported_keeping_dims", "made_inputs",
           "node_lines", "run_script", "script", "versions"]
