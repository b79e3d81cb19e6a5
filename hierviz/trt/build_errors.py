"""What a failed conversion or build says, and whose failure it is: the subgraph's (a converter
raising, the builder giving no engine: its informative line and whole text), or not (out of
memory, an interrupt, hierviz failing to call Torch-TensorRT: a BuildError).

`error_line` is the line a failure's row shows (`informative_line`: that line and whether it was
cut to fit), `error_details` the whole text, `telling_error` the one of TensorRT's logged errors
that says most (`logged_cause`: that one, where it says what failed), `warning_texts` what
Torch-TensorRT warned.
"""

from __future__ import annotations

import contextlib
import operator
import re
import warnings
from pathlib import Path
from types import ModuleType
from typing import Iterator, NamedTuple

import torch

from hierviz.errors import BuildError, BuildInterrupted
from hierviz.foundation.error_text import OBJECT_ADDRESS as _OBJECT, TENSORRT_CHECK, first_line
from hierviz.trt.loading import FIX_DATACENTER, FIX_RTX, installed_distribution, installed_variant


ERROR_LINE_LIMIT = 200
CUT_MARK = "\u2026"  # ends a line cut to ERROR_LINE_LIMIT

# pybind's "f(): incompatible function arguments. The following argument types are supported: ... Invoked with: ..."
_PYBIND = re.compile(r"^(?P<function>[\w.]*\(\)): incompatible function arguments\..*?Invoked with:\s*(?P<args>.*)",
                     re.DOTALL)


class ErrorLine(NamedTuple):
    """An error's informative line and whether it was cut to ERROR_LINE_LIMIT characters (after
    its last whole word, then CUT_MARK): a cut line matches a longer one as far as it goes."""

    text: str
    cut: bool


def error_line(error: BaseException | str) -> str:
    """The informative line of an error (an exception, 'TypeName: ...', or a message), at most
    200 characters, object addresses left out: for pybind's incompatible function arguments the
    function and what it was invoked with; for a failed CHECK (Myelin's), the message's head and
    the CHECK with its file:line; else the first line."""
    return informative_line(error).text


def informative_line(error: BaseException | str) -> ErrorLine:
    """error_line's line, and whether it was cut to fit."""
    if isinstance(error, BaseException):
        text = f"{type(error).__name__}: {error}".strip() if str(error).strip() else type(error).__name__
    else:
        text = error.strip()
    prefix, _, rest = text.partition(": ")
    if not re.fullmatch(r"\w+", prefix):
        prefix, rest = "", text
    pybind = _PYBIND.search(rest)
    check = TENSORRT_CHECK.search(rest)
    if pybind:
        line = f"{pybind['function']}: incompatible function arguments; invoked with: {pybind['args']}"
    elif check:
        head = rest[:check.start()].split(" (")[0].split(" [")[0].rstrip(" :(")
        line = f"{head} ({rest[check.start():]}" if head else rest[check.start():]
    else:
        line = rest.splitlines()[0] if rest else ""
    line = " ".join(_OBJECT.sub(r"<\1>", line).split())
    line = f"{prefix}: {line}" if prefix and line else prefix or line
    if len(line) <= ERROR_LINE_LIMIT:
        return ErrorLine(line, False)
    head = line[:ERROR_LINE_LIMIT - len(CUT_MARK)]
    if line[len(head)] != " " and " " in head:  # a partial last word would change with the sizes before it
        head = head.rsplit(" ", 1)[0]
    return ErrorLine(head.rstrip() + CUT_MARK, True)


def error_details(error: BaseException | list[str]) -> str:
    """The whole text of an error (an exception, or TensorRT's logged errors), addresses left out."""
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else "\n".join(error)
    return _OBJECT.sub(r"<\1>", text.strip())


def warning_texts(heard: list[warnings.WarningMessage]) -> tuple[str, ...]:
    """The warnings' texts, each once, in the order first heard, addresses left out."""
    return tuple(dict.fromkeys(" ".join(_OBJECT.sub(r"<\1>", str(w.message)).split()) for w in heard))


# TensorRT's report of a failed CUDA runtime call ("Error Code 1: Cuda Runtime (... cudaError 35:
# CUDA driver version is insufficient ...)")
_CUDA_RUNTIME = re.compile(r"Cuda Runtime|cudaError", re.IGNORECASE)


def telling_error(errors: list[str]) -> str:
    """The most telling of TensorRT's logged errors, on one line: the last that names a failed
    check (an exception, a CHECK), else the last with an error code. A CUDA runtime error comes
    last among them: a build that fails logs one after the builder's own error on a machine
    whose driver cannot run CUDA (TensorRT-RTX on a CPU), and it says nothing of the network."""
    lines = [" ".join(e.split()) for e in errors if e.strip()]
    candidates = [line for line in lines if not _CUDA_RUNTIME.search(line)] or lines
    for words in (("Exception", "CHECK"), ("Error Code",)):
        for line in reversed(candidates):
            if any(w in line for w in words):
                return line
    return candidates[-1] if candidates else ""


def logged_cause(errors: list[str]) -> str | None:
    """TensorRT's logged error that says why a conversion failed, on one line: the telling one
    (telling_error) when it names an Error Code, a CHECK or an Exception and is no CUDA runtime
    report; None when TensorRT logged no such error. A converter that misuses TensorRT's API
    gets its cause logged ("[TOPK]...: at least 2 dimensions are required for input") and an
    exception that says less ("Could not get tensor shape.")."""
    said = telling_error(errors)
    if any(w in said for w in ("Exception", "CHECK", "Error Code")) and not _CUDA_RUNTIME.search(said):
        return said
    return None


# TensorRT's logged out-of-memory errors: its OutOfMemory and allocation-failure codes, CUDA's
# "out of memory", the host allocator's "heap memory may be exhausted" and "could not be allocated".
OUT_OF_MEMORY = re.compile(r"out ?of ?memory|Error Code 5\b|FAILED_ALLOCATION|could not be allocated|"
                           r"heap memory may be exhausted|bad_alloc", re.IGNORECASE)
_PACKAGE = str(Path(__file__).resolve().parent.parent)  # hierviz's own code
_OURS = (AttributeError, ImportError, NameError, TypeError)


def hierviz_failed(exc: BaseException) -> bool:
    """Whether `exc` is hierviz's own error calling Torch-TensorRT (a private API that moved): an
    AttributeError, ImportError, NameError or TypeError raised in hierviz's code, not in a converter."""
    if not isinstance(exc, _OURS):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and str(Path(tb.tb_frame.f_code.co_filename).resolve()).startswith(_PACKAGE)


def not_supported_error(exc: BaseException) -> BuildError:
    """The BuildError for hierviz failing to call the installed Torch-TensorRT."""
    name, version = installed_distribution() or ("torch-tensorrt", "?")
    api = "API"
    if isinstance(exc, AttributeError) and exc.name:
        owner = getattr(exc, "obj", None)
        owner_name = owner.__name__ if isinstance(owner, (type, ModuleType)) else type(owner).__name__
        api = f"{owner_name}.{exc.name}"
    elif isinstance(exc, ImportError):
        missing = re.search(r"cannot import name '(\w+)'", str(exc))
        api = ".".join(filter(None, (exc.name, missing[1] if missing else None))) or api
    elif isinstance(exc, NameError) and exc.name:
        api = exc.name
    elif re.match(r"[\w.<>]+\(\)", str(exc)):  # TypeError: 'TRTInterpreter.run() takes 1 positional argument ...'
        api = str(exc).split("()")[0]
    fix = FIX_RTX if installed_variant()[1] == "rtx" else FIX_DATACENTER
    return BuildError(f"part.build(): hierviz could not call {name} {version}'s {api} ({first_line(exc)}): this "
                      f"Torch-TensorRT is not the one hierviz supports (2.14); `{fix}` installs it. Nothing was "
                      "stored.")


def _weights(gm: torch.fx.GraphModule) -> str:
    """The size of the subgraph's weights in words ('1.1 GB'), for an out-of-memory message."""
    total = 0
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            try:
                value = operator.attrgetter(str(n.target))(gm)
            except AttributeError:
                continue
            if isinstance(value, torch.Tensor):
                total += value.numel() * value.element_size()
    return f"{total / 1e9:.1f} GB" if total >= 1e8 else f"{total / 1e6:.1f} MB" if total >= 1e5 else f"{total} bytes"


def out_of_memory_error(doing: str, gm: torch.fx.GraphModule, said: str) -> BuildError:
    """The BuildError for running out of memory while `doing` (what was said of it: `said`)."""
    return BuildError(f"part.build(): out of memory while {doing} ({_weights(gm)} of weights; {said}): free memory "
                      "or build a smaller part (torch_executed_ops, or a smaller model), then build() again; nothing "
                      "was stored")


@contextlib.contextmanager
def not_the_subgraphs(doing: str, gm: torch.fx.GraphModule) -> Iterator[None]:
    """Out of memory and an interrupt while `doing` raise BuildError: the machine's, not the subgraph's."""
    try:
        yield
    except KeyboardInterrupt as exc:
        raise BuildInterrupted(f"part.build(): interrupted while {doing}; nothing of it was stored (engines "
                               "built before are kept in the build cache): call build() again to go on") from exc
    except (MemoryError, torch.OutOfMemoryError) as exc:
        raise out_of_memory_error(doing, gm, first_line(exc)) from exc


__all__ = ["ERROR_LINE_LIMIT", "CUT_MARK", "ErrorLine", "OUT_OF_MEMORY", "error_details", "error_line",
           "informative_line", "hierviz_failed", "logged_cause",
           "not_supported_error", "not_the_subgraphs", "out_of_memory_error", "telling_error", "warning_texts"]
