"""The CaptureError of a failed `torch.export`: what went wrong on one short first line (at most
about 300 characters, with the user's file:line where torch gives one), a hint, and the way to
see the model anyway: `ir="torch_compile"`, graph by graph.

A dynamic dimension torch.export specialised says so on the first line: one whose example size is 0
or 1 (torch.export fixes such a size, then refuses the Dim) is named with the fix, an example of size 2
or more (`specialised_dims`); one the model's code fixed leads with torch's own explanation.

torch's own message can be thousands of characters on its first line (SSDlite's data-dependent
guard lists 90 symbols); it stays whole on `err.__cause__`, and what torch printed and logged
meanwhile (the partial graph) on `err.torch_output` (hierviz.foundation.torch_output keeps it from the
screen; the CLI's --verbose shows both).
"""

from __future__ import annotations

import inspect
import os
import re
import sysconfig
import traceback
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch

from hierviz.errors import CaptureError
from hierviz.foundation.stack_traces import frames

FIRST_LINE = 300  # characters, at most, of the message's first line

_TORCH_CALL = re.compile(r'The following call raised this error:\s*\n\s*(?=File ")')  # the frame it quotes next
_CAUSED_BY = re.compile(r"Caused by: \(([^\s()]+:\d+) in ([^\s()]+)\)")
_OURS = os.path.dirname(os.path.abspath(__file__)) + os.sep  # hierviz's own folder
_LIBRARY = tuple(dict.fromkeys(p for p in (sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib"))
                                if p))


def failure_hint(exc: BaseException) -> str:
    """What to try, from the kind of failure torch reports."""
    text = f"{type(exc).__name__}: {exc}".lower()
    if any(k in text for k in ("data-dependent", "data dependent", "guardondatadependent",
                                "dynamic control flow", "could not guard", "could not extract specialized integer")):
        return ("the model branches on tensor values (data-dependent control flow). Rewrite the "
                "branch with torch.cond / torch.where, or move it out of forward().")
    if any(k in text for k in ("cache", "pytree", "unsupported output", "not a tensor", "dynamiccache")):
        return ("the model returns or takes a type torch.export cannot flatten (a KV cache, for "
                "example). For Hugging Face models pass use_cache=False / config.use_cache=False.")
    if any(k in text for k in ("constraint", "dynamic_shapes", "specialized", "dim(")):
        return ("the dynamic_shapes you passed conflict with the model: check the Dim ranges and "
                "which dimensions really vary.")
    if "unsupported" in text or "not implemented" in text:
        return "torch.export does not support an operation in this model; see the cause above."
    return "see the cause above; torch.export must succeed for Torch-TensorRT to compile the model."


def _short_path(path: str) -> str:
    """A file under site-packages from its package folder on; any other path as it is."""
    marker = f"{os.sep}site-packages{os.sep}"
    return path.split(marker, 1)[1] if marker in path else path


def _model_frame(exc: BaseException) -> str | None:
    """The deepest frame of the traceback in the model's code: not torch's, hierviz's or
    Python's own (non-strict export runs the model's Python, so its frames are there)."""
    torch_dir = f"{os.sep}torch{os.sep}"
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        name = frame.filename
        if (torch_dir in name and "site-packages" in name) or name.startswith(_OURS) or name.startswith("<") \
                or any(name.startswith(p) and "site-packages" not in name for p in _LIBRARY):
            continue
        found = f"{_short_path(name)}:{frame.lineno} in {frame.name}"
    return found


def where(exc: BaseException) -> str | None:
    """The model's file:line (and function, and the line's code where torch quotes it) that
    torch.export failed at, or None when neither torch's message nor the traceback says."""
    text = str(exc)
    call = _TORCH_CALL.search(text)
    quoted = frames("\n".join(text[call.end():].split("\n", 2)[:2])) if call else []  # its File line, its code
    if quoted:
        call_frame = quoted[0]
        code = f" ({call_frame.code})" if call_frame.code else ""
        return f"{_short_path(call_frame.file)}:{call_frame.line} in {call_frame.function}{code}"
    frame = _model_frame(exc)
    if frame:
        return frame
    caused = _CAUSED_BY.search(text)
    return f"{caused[1]} in {caused[2]}" if caused else None


@dataclass(frozen=True)
class SpecialisedDim:
    """A dynamic dimension whose example size torch.export fixes: the Dim's name (or "Dim.DYNAMIC"),
    where it is ("x.shape[0]") and the example's size there (0 or 1)."""

    name: str
    where: str
    size: int


def _dynamic(dim: Any, size: int) -> bool:
    """Whether `dim` asks for a dynamic dimension that export refuses to specialise at `size`: a named
    Dim (not derived) whose range holds it, or Dim.DYNAMIC; Dim.AUTO and Dim.STATIC specialise freely."""
    if type(dim) is torch.export.Dim:
        return int(getattr(dim, "min", 0) or 0) <= size
    return getattr(dim, "type", None) is torch.export.Dim.DYNAMIC.type


def _walk(path: str, value: Any, spec: Any, found: list[SpecialisedDim]) -> None:
    """The dims of `spec` (dynamic_shapes for `value`, an input called `path`) on example sizes of 0 or 1."""
    if isinstance(value, torch.Tensor):
        axes = spec.items() if isinstance(spec, Mapping) else enumerate(spec) if isinstance(spec, (list, tuple)) else ()
        for axis, dim in axes:
            if isinstance(axis, int) and 0 <= axis < value.dim() and value.shape[axis] in (0, 1) \
                    and _dynamic(dim, int(value.shape[axis])):
                name = getattr(dim, "__name__", None) if type(dim) is torch.export.Dim else "Dim.DYNAMIC"
                found.append(SpecialisedDim(str(name), f"{path}.shape[{axis}]", int(value.shape[axis])))
    elif isinstance(value, (list, tuple)) and isinstance(spec, (list, tuple)):
        for i, (v, s) in enumerate(zip(value, spec)):
            _walk(f"{path}[{i}]", v, s, found)
    elif isinstance(value, Mapping) and isinstance(spec, Mapping):
        for key in spec:
            if key in value:
                _walk(f"{path}[{key!r}]", value[key], spec[key], found)


def specialised_dims(model: Any, args: tuple, kwargs: dict | None, dynamic_shapes: Any) -> tuple[SpecialisedDim, ...]:
    """The dynamic dimensions of `dynamic_shapes` (as torch.export takes them: by the forward's argument
    names, or by position) whose example size is 0 or 1: torch.export fixes such a size, and then refuses a
    named Dim or Dim.DYNAMIC on it. () when there is none, or the dynamic_shapes do not fit the inputs."""
    if dynamic_shapes is None:
        return ()
    try:
        bound = inspect.signature(model.forward).bind(*args, **(kwargs or {})).arguments
    except (TypeError, ValueError):  # inputs the forward does not take: torch.export says so itself
        return ()
    if isinstance(dynamic_shapes, Mapping):
        pairs = [(name, bound[name], spec) for name, spec in dynamic_shapes.items() if name in bound]
    else:
        pairs = list(zip(bound, bound.values(), dynamic_shapes))
    found: list[SpecialisedDim] = []
    for name, value, spec in pairs:
        _walk(str(name), value, spec, found)
    return tuple(found)


def _range_conflict(exc: BaseException) -> bool:
    """Whether torch.export refused the dynamic_shapes themselves: its constraint violation (a Dim the
    trace specialised), or the ValueError it raises for a Dim hint's range conflict."""
    from torch._dynamo.exc import UserError, UserErrorType

    if isinstance(exc, UserError):
        return exc.error_type is UserErrorType.CONSTRAINT_VIOLATION
    raised_at = traceback.extract_tb(exc.__traceback__)
    return type(exc) is ValueError and bool(raised_at) and \
        f"{os.sep}torch{os.sep}_export{os.sep}" in raised_at[-1].filename


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _specialised_text(dims: Sequence[SpecialisedDim]) -> str:
    """The first line's cause for dims torch.export fixed at their example size of 0 or 1, with the fix."""
    by_name: dict[str, list[SpecialisedDim]] = {}
    for d in dims:
        by_name.setdefault(d.name, []).append(d)
    named = [f"{name} ({', '.join(d.where for d in same)})" for name, same in by_name.items()]
    sizes = [str(same[0].size) for same in by_name.values()]
    if len(named) == 1:
        return (f"the dynamic dimension {named[0]} was specialized to its example size, {sizes[0]} (torch.export "
                "fixes a size of 0 or 1): give an example input of size 2 or more along it.")
    return (f"the dynamic dimensions {_and(named)} were specialized to their example sizes, {_and(sizes)} "
            "(torch.export fixes a size of 0 or 1): give example inputs of size 2 or more along them.")


SPECIALISED_HINT = ("torch.export treats a dimension whose example size is 0 or 1 as that constant; with an example of "
                    "size 2 or more (inside the Dim's range) it stays dynamic, and the graph takes every size the Dim "
                    "allows.")


def export_error(model_name: str, exc: BaseException, *, dynamic_shapes: bool = False,
                 torch_output: str = "", hint: str | None = None,
                 specialised: Sequence[SpecialisedDim] = ()) -> CaptureError:
    """The CaptureError for `exc`, raised by torch.export on `model_name` (raise it `from exc`):
    the first line is the cause, cut to FIRST_LINE characters, and where it happened; then the
    hint (`hint`, else one from the kind of failure), and (unless dynamic_shapes were given,
    which torch.compile's path does not take) that ir="torch_compile" shows the model graph by
    graph. `torch_output`, what torch printed and logged meanwhile, is kept on the error's
    `torch_output`. `specialised` (`specialised_dims`): when torch.export refused the
    dynamic_shapes, the dims it fixed at an example size of 0 or 1 are the cause, with the fix; a
    refusal without them leads with torch's explanation (its "- ..." lines), not its header."""
    lines = str(exc).strip().splitlines()
    first = " ".join(lines[0].split()) if lines else ""
    conflict = _range_conflict(exc)
    if conflict and specialised:
        err = CaptureError(f"torch.export failed for {model_name}: {_specialised_text(specialised)}\n"
                           f"Hint: {SPECIALISED_HINT}")
        err.torch_output = torch_output
        return err
    explained = [" ".join(line.split())[2:] for line in lines if line.lstrip().startswith("- ")]
    if conflict and explained:
        first = " ".join(explained)
    at = where(exc)
    if at and len(at) > FIRST_LINE // 2:
        at = at[:FIRST_LINE // 2 - 3] + "..."
    head = f"torch.export failed for {model_name}" + (f" at {at}" if at else "") + f": {type(exc).__name__}: "
    room = FIRST_LINE - len(head)
    if len(first) > room:
        more = f" ... ({len(first):,} characters: the whole message is err.__cause__)"
        first = first[:max(room - len(more), 40)].rstrip() + more
    text = head + first + f"\nHint: {hint or failure_hint(exc)}"
    if not dynamic_shapes:
        text += ("\nTo see the model anyway, graph by graph as torch.compile(model, backend=\"torch_tensorrt\") "
                 "runs it: hv.partition(model, inputs, ir=\"torch_compile\") (the CLI: --ir "
                 "torch_compile). torch's full message: err.__cause__ (the CLI: --verbose).")
    err = CaptureError(text)
    err.torch_output = torch_output
    return err


__all__ = ["FIRST_LINE", "SpecialisedDim", "export_error", "failure_hint", "specialised_dims", "where"]
