"""The CaptureError of a failed `torch.export`: what went wrong on one short first line (at most
about 300 characters, with the user's file:line where torch gives one), a hint, and the way to
see the model anyway: `ir="torch_compile"`, graph by graph.

torch's own message can be thousands of characters on its first line (SSDlite's data-dependent
guard lists 90 symbols); it stays whole on `err.__cause__`, and what torch printed and logged
meanwhile (the partial graph) on `err.torch_output` (hierviz.foundation.torch_output keeps it from the
screen; the CLI's --verbose shows both).
"""

from __future__ import annotations

import os
import re
import sysconfig
import traceback

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


def export_error(model_name: str, exc: BaseException, *, dynamic_shapes: bool = False,
                 torch_output: str = "", hint: str | None = None) -> CaptureError:
    """The CaptureError for `exc`, raised by torch.export on `model_name` (raise it `from exc`):
    the first line is the cause, cut to FIRST_LINE characters, and where it happened; then the
    hint (`hint`, else one from the kind of failure), and (unless dynamic_shapes were given,
    which torch.compile's path does not take) that ir="torch_compile" shows the model graph by
    graph. `torch_output`, what torch printed and logged meanwhile, is kept on the error's
    `torch_output`."""
    lines = str(exc).strip().splitlines()
    first = " ".join(lines[0].split()) if lines else ""
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


__all__ = ["FIRST_LINE", "export_error", "failure_hint", "where"]
