"""The exceptions hierviz raises. Every expected failure is a HiervizError whose message
says what went wrong and what to do about it."""

from __future__ import annotations

import difflib
import functools
import inspect
import sys
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Iterable, Sequence, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])


class HiervizError(Exception):
    """Base class of every error hierviz raises on purpose."""


class ConfigError(HiervizError, ValueError):
    """A Config field is invalid (unknown op, empty priority, min_block_size < 1, ...).

    `setting`: the setting the message starts with, as 'setting: reason' (a Config field such
    as 'min_block_size', or a command-line option such as '--priority'; made by `for_setting`);
    None when the message names none first. `reason`: the message after that name, for a
    caller that names the setting its own way (the command line's option, a grid's value)."""

    setting: str | None = None
    _reason: str | None = None

    @classmethod
    def for_setting(cls, setting: str, reason: str) -> "ConfigError":
        """The error 'setting: reason', with both kept as fields."""
        exc = cls(f"{setting}: {reason}")
        exc.setting, exc._reason = setting, reason
        return exc

    @property
    def reason(self) -> str:
        return str(self) if self._reason is None else self._reason


class CaptureError(HiervizError):
    """The model could not be exported / lowered to an aten graph. `torch_output`: what torch
    printed and logged while it failed (a failed torch.export's partial graph), kept off the
    screen; the CLI's --verbose shows it."""

    torch_output: str = ""


class RenderError(HiervizError):
    """A diagram could not be drawn (for example graphviz's `dot` is missing)."""


class MeasureError(HiervizError):
    """A partition could not be compiled or timed."""


class BuildError(HiervizError):
    """part.build() stopped for a reason that is not the subgraph's: out of memory, an interrupt,
    or hierviz failing to call the installed Torch-TensorRT (a private API that moved). Never
    stored as the subgraph's build, and never starts a fix search; the message says what to do."""


class BuildInterrupted(BuildError, KeyboardInterrupt):
    """part.build() was interrupted (Ctrl-C, a notebook's Interrupt): a BuildError saying that
    nothing of that subgraph was stored, and still a KeyboardInterrupt, so a loop that lets
    interrupts through (`except KeyboardInterrupt: raise`) stops."""


# The advice for measuring where TensorRT cannot build: a setting that accelerates without it
# (TorchInductor's support is empty by default, as upstream's is: priority alone accelerates nothing).
WITHOUT_TENSORRT = 'hv.partition(model, inputs, priority=("inductor",), support={"inductor": hv.support.inductor()})'


class TensorRTUnavailableError(MeasureError):
    """torch_tensorrt is not installed or cannot build engines here. A MeasureError: hv.measure
    and Partition.compile raise it for TensorRT subgraphs (unless on_error="fallback")."""


class SavedModelNotFoundError(HiervizError, FileNotFoundError):
    """`hierviz.latency.deploy.load(folder)`: no saved model there (`.filename` is the path)."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.filename = path

    def __str__(self) -> str:
        return str(self.args[0])


class CustomOpUnavailable(HiervizError, ImportError):
    """A graph read back as data (the capture cache, the explorer's worker, a sweep's process, a
    Ray task) names a custom op this process cannot register: `op` its name
    ('ns::op'), `module` the module that registered it where the graph was made (None: it was
    defined in `__main__`). An ImportError too, as unpickling a class that is not there is."""

    def __init__(self, message: str, op: str | None = None, module: str | None = None) -> None:
        super().__init__(message)
        self.op = op
        self.module = module


class PartitionCheckError(HiervizError, AssertionError):
    """hv.check: the partition breaks a limit (every broken limit with its figure, and the
    top blockers, in the message). An AssertionError too, so pytest reports it as a failure."""


class SavedPartitionError(HiervizError):
    """hv.load_partition: the file is not a saved partition, or one this hierviz cannot read;
    or something was asked of a loaded partition that needs its graph (compile, measure)."""


class ConfigWarning(UserWarning):
    """A setting that is valid but probably not what was meant (e.g. support for a custom
    backend that is not in priority, so it is ignored)."""


def unknown_arguments(who: str, given: Iterable[str], valid: Sequence[str]) -> None:
    """ConfigError when `given` holds names that are not in `valid`: naming the closest valid
    name and listing them all (what a TypeError "unexpected keyword argument" would not say)."""
    unknown = [str(k) for k in given if k not in valid]
    if not unknown:
        return
    hints = [m for k in unknown for m in difflib.get_close_matches(k, valid, n=1)]
    msg = f"{who}: unknown argument(s) {unknown}"
    msg += f"; did you mean {', '.join(repr(h) for h in hints)}?" if hints else "."
    raise ConfigError(f"{msg} It takes {', '.join(valid)}.")


def parameter_names(func: Callable[..., Any], skip: Sequence[str] = ()) -> list[str]:
    """The names `func` takes (not *args/**kwargs, not `skip`)."""
    return [p.name for p in inspect.signature(func).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in ("self", *skip)]


_PUBLIC_PREFIX = {"hierviz.zoo": "hv.zoo.", "hierviz.latency.deploy": "hierviz.latency.deploy."}


def checked_arguments(func: F) -> F:
    """Decorator for public functions: a call with an unknown keyword, a missing argument or
    too many positional ones raises ConfigError naming the valid arguments (not TypeError)."""
    signature = inspect.signature(func)
    names = parameter_names(func)
    who = func.__qualname__.replace("<locals>.", "")
    if "." not in who:  # a function: the name a user calls it by
        who = _PUBLIC_PREFIX.get(func.__module__, "hv.") + who

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            unknown_arguments(who, kwargs, names)
            raise ConfigError(f"{who}: {exc}. It takes {', '.join(names)}.") from None
        return func(*args, **kwargs)

    return cast(F, wrapper)  # functools.wraps keeps func's signature and attributes


def user_stacklevel() -> int:
    """The `stacklevel` for `warnings.warn` that points at the first caller outside hierviz,
    so a warning shows the user's line, not ours."""
    package = str(Path(__file__).parent)
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level
