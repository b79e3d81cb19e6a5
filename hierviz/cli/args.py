"""Reading the command line's inputs: MODEL (a zoo name, file.py:function or a saved .json
partition), output paths,
the settings' options and --grid values. Every mistake is a UsageError or a ConfigError (one
line, exit code 2 in `hierviz.cli.commands.main`); the settings' options are made from the settings
table (hierviz.settings.config.SETTINGS: each row's flag, help and text reader)."""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from hierviz.settings import config as settings
from hierviz.settings.config import Config, derive
from hierviz.settings.engine_table import COMPILE_ENGINES
from hierviz.settings.setting_values import whole_number
from hierviz.capturing.aten_capture import IRS
from hierviz.capturing.target_device import DEFAULT_TARGET, TARGET_DEVICES
from hierviz.errors import CaptureError, ConfigError
from hierviz.partitioner import load_partition, partition


class UsageError(Exception):
    """A mistake in the command line: printed as one line, exit code 2."""



def _takes_no_arguments(func: Any) -> bool:
    """True when `func()` binds: a MODEL function takes no arguments."""
    try:
        inspect.signature(func).bind()
    except (TypeError, ValueError):
        return False
    return True

def load_model(spec: str) -> tuple[Any, Any]:
    """A zoo name or 'file.py:function' -> (model, example_inputs)."""
    from hierviz import zoo

    if ":" in spec and spec.split(":", 1)[0].endswith(".py"):
        path_text, func_name = spec.rsplit(":", 1)
        return call_user_function(path_text, func_name)
    if spec.endswith(".py"):
        raise UsageError(f"MODEL {spec!r} needs the function to call: {spec}:FUNCTION, where FUNCTION "
                         "returns (model, example_inputs)")
    names = zoo.names()
    if spec not in names:
        hint = difflib.get_close_matches(spec, names, n=1, cutoff=0.6)
        did_you_mean = f"did you mean {hint[0]!r}? " if hint else ""
        raise UsageError(f"unknown model {spec!r}: {did_you_mean}Use one of {', '.join(names)} or file.py:function.")
    return zoo.load(spec)


class UserCodeError(UsageError):
    """The user's own file or function raised: one line naming it; --debug re-raises the original."""


def call_user_function(path_text: str, func_name: str) -> tuple[Any, Any]:
    """Import `path_text` and call `func_name()`; every failure is one line naming the user's
    code (the traceback comes with --debug)."""
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(f"no such file: {path_text} (MODEL is a zoo name or file.py:function)")
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    if module_spec is None or module_spec.loader is None:
        raise UsageError(f"cannot import {path_text} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        raise UserCodeError(f"importing {path_text} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.pop(0)
    func = getattr(module, func_name, None)
    if func is None:
        found = sorted(n for n, v in vars(module).items() if inspect.isfunction(v) and v.__module__ == module.__name__
                       and not n.startswith("_") and _takes_no_arguments(v))  # what MODEL can name
        hint = difflib.get_close_matches(func_name, found, n=1)
        raise UsageError(f"{path_text} has no function {func_name!r}"
                         + (f"; did you mean {hint[0]!r}?" if hint else "")
                         + (f" (functions there: {', '.join(found)})" if found else ""))
    if not callable(func):
        raise UsageError(f"{path_text}:{func_name} is not a function but {type(func).__name__} {func!r:.40}; MODEL "
                         "needs a function returning (model, example_inputs)")
    try:
        inspect.signature(func).bind()
    except TypeError:
        raise UsageError(f"{path_text}:{func_name}{inspect.signature(func)} needs arguments; MODEL functions are "
                         "called with none and return (model, example_inputs)") from None
    except ValueError:  # no signature to inspect (a builtin): just call it
        pass
    try:
        result = func()
    except Exception as exc:
        raise UserCodeError(f"{path_text}:{func_name}() raised {type(exc).__name__}: {exc}") from exc
    if not (isinstance(result, tuple) and len(result) == 2):
        raise UsageError(f"{path_text}:{func_name} must return (model, example_inputs), got {type(result).__name__}")
    return result


def writable(path_text: str, option: str) -> Path:
    """Check before any work that `path_text` can be written (its folder made if needed)."""
    path = Path(path_text)
    if path.is_dir():
        raise UsageError(f"{option} {path_text}: that is a directory; give a file name, e.g. {path / 'out.html'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option} {path_text}: cannot create its folder ({exc.strerror or exc})") from None
    if not os.access(path.parent, os.W_OK):
        raise UsageError(f"{option} {path_text}: its folder is not writable")
    return path


def _split(text: str | None, sep: str = ",") -> list[str]:
    return [t.strip() for t in (text or "").split(sep) if t.strip()]


def add_setting_options(p: argparse.ArgumentParser) -> None:
    """One option per setting that has a flag in the settings table (a switch when it takes
    no value); each lands in `args.<setting name>`, None when not given."""
    for row in settings.SETTINGS:
        if row.flag is None:
            continue
        if row.flag.metavar is None:
            p.add_argument(row.option, dest=row.name, action="store_true", default=None, help=row.flag.help)
        else:
            p.add_argument(row.option, dest=row.name, metavar=row.flag.metavar, default=None, help=row.flag.help)


def build_config(args: argparse.Namespace) -> Config:
    """The Config the options describe: each given option read once by its row (its flag's
    reader, else its text reader and parser); only the rules between settings run after."""
    values: dict[str, Any] = {}
    for row in settings.SETTINGS:
        flag = row.flag
        text = getattr(args, row.name, None) if flag is not None else None
        if flag is None or text is None or text is False:
            continue
        try:
            if text is True:  # a switch
                values[row.name] = True
            elif flag.read is not None:
                values[row.name] = flag.read(text)
            else:
                values[row.name] = settings.parse_text(row.name, text)
        except ConfigError as exc:  # named by its option, once
            named = exc.setting in (row.name, row.option)
            raise UsageError(f"{row.option}: {exc.reason if named else exc}") from None
    return derive(Config(), values)


def parse_grid(items: Sequence[str], base: Any = None) -> dict[str, list[Any]]:
    """--grid field=v1,v2 → {field: [v1, v2]}: a comma separates values, '>' or '+' joins a
    list inside one value (priority=tensorrt>inductor,inductor is two configurations). Every
    value is read and checked on `base` by the one grid check (hierviz.compare.grid, as
    hv.sweep does), so every typo is reported, in one line, before the sweep runs."""
    from hierviz.compare.grid import check_grid  # the compare package loads pandas

    names = [row.name for row in settings.SETTINGS if row.read_text is not None]  # settings written as text
    texts: dict[str, list[str]] = {}
    for item in items:
        if "=" not in item:
            raise UsageError(f"--grid takes field=v1,v2 (got {item!r})")
        field, values = item.split("=", 1)
        field = field.strip().replace("-", "_")
        if field not in names:
            hint = difflib.get_close_matches(field, names, n=1)
            raise UsageError(f"--grid: unknown field {field!r}" + (f", did you mean {hint[0]!r}?" if hint else ".")
                             + f" Use one of {', '.join(names)}.")
        if field in texts:
            raise UsageError(f"--grid {field} is given twice; list all its values in one --grid {field}=v1,v2")
        texts[field] = _split(values)
        if not texts[field]:
            raise UsageError(f"--grid {field}= has no values")
    try:
        grid, _ = check_grid(texts, base, name="--grid", text=True)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    return grid


def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not whole_number(value, minimum):
        raise argparse.ArgumentTypeError(f"must be >= {minimum}, not {value}")
    return value


def positive(text: str) -> int:
    return _whole_number(text, 1)


def non_negative(text: str) -> int:
    return _whole_number(text, 0)


IR_HELP = ("how MODEL is captured: dynamo (default: torch.export, one graph, as torch_tensorrt.compile does) or "
           "torch_compile (graph by graph at dynamo's graph breaks, as torch.compile(backend='torch_tensorrt') does)")
TARGET_HELP = ("the device MODEL is lowered for: cuda (default: as Torch-TensorRT lowers it on a CUDA GPU, whatever "
               "machine runs hierviz) or cpu (as lowered on a CPU)")
EXPORT_FAILED = "torch.export failed"  # how CaptureError's first line starts when the export is what failed


def add_ir_option(p: argparse.ArgumentParser) -> None:
    """--ir and --target-device, for every command that partitions a MODEL."""
    p.add_argument("--ir", choices=IRS, default=None, help=IR_HELP)
    p.add_argument("--target-device", choices=TARGET_DEVICES, default=None, help=TARGET_HELP)


def target_device(args: argparse.Namespace) -> str:
    """--target-device, or the default target."""
    return getattr(args, "target_device", None) or DEFAULT_TARGET


def partition_from_args(args: argparse.Namespace) -> Any:
    """The partition the setting flags describe: the Config and --engine checked before MODEL is
    loaded (a wrong setting fails at once), then MODEL partitioned with them (graph by graph
    with --ir torch_compile). A model torch.export refuses is one line ending with the way on:
    --ir torch_compile."""
    from hierviz.cli.output import import_tensorrt_quietly

    config = build_config(args)
    if config.engine in COMPILE_ENGINES:
        from hierviz.partitioner.upstream.compile_partitioners import check_available

        check_available(config.engine)
    model, inputs = load_model(args.model)
    import_tensorrt_quietly(args)
    ir = getattr(args, "ir", None) or "dynamo"
    try:
        return partition(model, inputs, config, ir=ir, target_device=target_device(args))
    except CaptureError as exc:
        first = str(exc).strip().split("\n", 1)[0]
        if ir != "dynamo" or not first.startswith(EXPORT_FAILED):
            raise
        short = first if len(first) <= 300 else first[:297] + "..."
        said = CaptureError(f"{short.rstrip('.')}. To see {args.model} graph by graph, as "
                            "torch.compile(backend='torch_tensorrt') compiles it, add --ir torch_compile")
        said.torch_output = exc.torch_output  # --verbose shows it, and torch's own error (the cause)
        raise said from (exc.__cause__ or exc)


def partition_or_saved(args: argparse.Namespace) -> Any:
    """MODEL partitioned with the setting flags, or a saved .json partition as it was saved
    (hv.load_partition); setting flags (or --ir) given with a saved partition are a UsageError,
    since they would change nothing."""
    if not args.model.lower().endswith(".json"):
        return partition_from_args(args)
    given = [row.option for row in settings.SETTINGS
             if row.flag is not None and getattr(args, row.name, None) not in (None, False)]
    given += [option for option, name in (("--ir", "ir"), ("--target-device", "target_device"))
              if getattr(args, name, None)]
    if given:
        raise UsageError(f"{', '.join(given)}: {args.model} is a saved partition, made with the settings it "
                         f"was saved with; to try other settings give MODEL (a zoo name or file.py:function)")
    return load_partition(args.model)
