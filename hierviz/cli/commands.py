"""The `hierviz` command: demo, report, sweep, tune, zoo, info (reading MODEL, paths and
settings from the command line lives in args.py, what it prints besides results in
output.py; blockers, check and diff in partitions.py)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any, NoReturn, Sequence

import hierviz as hv
from hierviz import trt
from hierviz.foundation import torch_output
from hierviz.foundation.cache_folder import folder_problem
from hierviz.trt.engine_file import loose_engines
from hierviz.capturing.disk_cache import CaptureStore
from hierviz.cli.args import (  # also hierviz.cli.commands.load_model etc., as before
    UsageError,
    UserCodeError,
    add_ir_option,
    add_setting_options,
    build_config,
    load_model,
    non_negative,
    parse_grid,
    partition_or_saved,
    positive,
    target_device,
    writable,
)
from hierviz.settings.engine_table import DEFAULT_ENGINE
from hierviz.cli.output import import_tensorrt_quietly, one_line_warnings
from hierviz.cli.partitions import add_commands
from hierviz.errors import HiervizError
from hierviz.support.support_map import SupportMap

EXIT_USAGE = 2

GRID_HELP = """\
lists inside grid values:
  In --grid a comma separates the values; a list inside one value (priority, torch_executed_ops)
  is joined by > or +. The same text means the same in --priority, hv.sweep and hv.tune, where
  > and + join lists too (a comma also joins a list in --priority, which takes one value).
    --grid priority=tensorrt>inductor,inductor      two configurations: (tensorrt, inductor), (inductor)
    --grid torch_executed_ops=none,add.Tensor+relu.default
                                                  two: no ops, {add.Tensor, relu.default}
    --grid min_block_size=1,3,5 --grid skip_fusion=yes,no
"""

DESCRIPTION = """\
See and tune Torch-TensorRT's hierarchical adjacency partitioner.

MODEL is a built-in model name (see `hierviz zoo`) or path/to/file.py:function, where the
function returns (model, example_inputs)."""

EPILOG = """\
examples:
  hierviz demo
  hierviz report resnet18 --min-block-size 3 -o resnet18.html
  hierviz report my_model.py:build --priority inductor>tensorrt --inductor-support all
  hierviz sweep bert --grid min_block_size=1,3,5,10 --grid priority=tensorrt>inductor,inductor>tensorrt --csv bert.csv
  hierviz tune tiny_conv --budget 20 --csv tiny_conv-tune.csv
  hierviz blockers efficientnet_b0 --torch-executed-ops add.Tensor --min-block-size 8
  hierviz check resnet18 --max-subgraphs 3 --min-coverage 0.95 --like resnet18.json
  hierviz check gpt2 --min-block-size 3 --build
  hierviz diff before.json after.json -o diff.svg
"""


# ------------------------------------------------------------------ commands
def cmd_zoo(args: argparse.Namespace) -> int:
    from hierviz import zoo

    for name in zoo.names():
        print(name)
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    """`hierviz cache info|clear`: the capture cache's and the build cache's folders, entries,
    sizes, temp files and their limit (hierviz.foundation.cache_limit), or empty them (a temp
    file another process is writing now stays). A cache folder that is a file: that, once."""
    from hierviz.building.engine_store import EngineStore

    problem = folder_problem()
    if problem is not None:
        print(f"hierviz cache {args.action}: {problem}", file=sys.stderr)
        return 1
    sweep = args.action == "clear"
    store, engines = CaptureStore(sweep=sweep), EngineStore(sweep=sweep)
    loose = loose_engines()  # engines built with the cache off
    if args.action == "clear":
        print(f"removed {store.clear()} cached capture(s) from {store.folder}")
        print(f"removed {engines.clear()} cached build(s) from {engines.folder}")
        loose.sweep_temp()
        left = store.info()["temp"].plus(engines.temp_survey())
        if left.files:
            print(f"left {left.files} temp file(s) other processes are writing now")
        return 0
    info = store.info()
    state = "on" if info["enabled"] else "off (HIERVIZ_CACHE=0)"
    print(f"capture cache: {info['folder']} ({state}); {info['entries']} entr{'y' if info['entries'] == 1 else 'ies'}, "
          f"{info['bytes'] / 2**20:.1f} MiB of {info['limit'] / 2**20:.0f} MiB")
    built = len(engines.builds())
    print(f"build cache: {engines.folder} ({state}); {built} build{'' if built == 1 else 's'} (part.build()), "
          f"{engines.size() / 2**20:.1f} MiB of {engines.limit.bytes / 2**20:.0f} MiB")
    temps = info["temp"].plus(engines.temp_survey()).plus(loose.temp_survey())
    if temps.files:
        print(f"temp files: {temps.text()}")
    print(f"limit: {engines.limit.bytes / 2**30:.1f} GiB ({engines.limit.bytes} bytes) for each cache "
          f"({engines.limit.why()})")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    import shutil

    import torch

    print(f"hierviz {__import__('hierviz').__version__}, torch {torch.__version__}")
    if args.check:
        import_tensorrt_quietly(args)
    print(trt.info(imports=args.check))
    print(f"graphviz dot: {shutil.which('dot') or 'missing (apt-get install graphviz)'}")
    return 0


TEXT_SUFFIXES = ("", ".txt", ".md")  # -o FILE with these gets the text report


def report_output(path_text: str) -> Path:
    """The -o FILE of `hierviz report`, refused before any work when its suffix is neither a
    format Partition.save writes nor text."""
    from hierviz.drawing.files import FORMATS

    suffix = Path(path_text).suffix.lower()
    if suffix not in FORMATS + TEXT_SUFFIXES:
        kinds = ", ".join(f for f in FORMATS + TEXT_SUFFIXES if f)
        raise UsageError(f"-o {path_text}: cannot write a {suffix} file; use one of {kinds} (or no suffix "
                         "for the text report).")
    return writable(path_text, "-o")


def cmd_report(args: argparse.Namespace) -> int:
    out = report_output(args.output) if args.output else None
    part = partition_or_saved(args)
    text = part.report()
    print(text)
    if out is not None:
        try:
            if out.suffix.lower() not in TEXT_SUFFIXES:
                if out.suffix.lower() == ".html" and not isinstance(part, hv.MultiGraphPartition):
                    part.compile_today()  # the report's "torch_tensorrt.compile today" table, its cost named there
                written = part.save(out)
            else:
                out.write_text(text)
                written = out
        except OSError as exc:
            raise UsageError(f"-o {args.output}: cannot write it ({exc.strerror or exc})") from None
        print(f"wrote {written}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    out = writable(args.csv, "--csv")
    if not args.grid:
        raise UsageError("sweep needs at least one --grid field=v1,v2")
    base = build_config(args)
    grid = parse_grid(args.grid, base)  # every configuration is valid before anything runs
    measure: Any = False
    if args.measure:
        measure = {k: v for k, v in (("warmup", args.warmup), ("iters", args.iters)) if v is not None} or True
    elif args.iters is not None or args.warmup is not None:
        raise UsageError("--iters and --warmup need --measure")
    model, inputs = load_model(args.model)
    import_tensorrt_quietly(args)
    table = hv.sweep(model, inputs, grid, base=base, measure=measure, progress=not args.quiet,
                     ir=args.ir or "dynamo", target_device=target_device(args))
    try:
        table.to_csv(out, index=False)
    except OSError as exc:
        raise UsageError(f"--csv {args.csv}: cannot write it ({exc.strerror or exc})") from None
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.to_string(index=False))
    print(f"wrote {out}")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from hierviz.compare.ray_executor import check_executor

    out = writable(args.csv, "--csv") if args.csv else None
    base = build_config(args)
    if base.engine != DEFAULT_ENGINE:
        raise UsageError("tune --engine: tune searches hierviz's partitioner; what torch_tensorrt.compile "
                         "runs (engine fast) is its compile_ms baseline. Leave --engine out.")
    if args.executor is not None:
        if args.ir == "torch_compile":
            raise UsageError("tune --ir torch_compile --executor: graph by graph, trials are measured in this "
                             "process (Ray tasks take one captured graph). Leave --executor out.")
        try:
            check_executor(args.executor)
        except hv.ConfigError as exc:
            raise UsageError(f"--executor: {exc}") from None
    measure = {k: v for k, v in (("warmup", args.warmup), ("iters", args.iters)) if v is not None}
    from hierviz.compare.tune_storage import check_storage

    try:
        check_storage(args.storage, args.study_name)
    except hv.ConfigError as exc:
        raise UsageError(f"--storage: {exc}") from None
    model, inputs = load_model(args.model)
    import_tensorrt_quietly(args)
    result = hv.tune(model, inputs, base=base, budget=args.budget, timeout=args.timeout, seed=args.seed,
                     measure=measure or None, torch_compile=args.torch_compile, executor=args.executor,
                     progress=not args.quiet, storage=args.storage, study_name=args.study_name,
                     ir=args.ir or "dynamo", target_device=target_device(args))
    import pandas as pd

    from hierviz.compare.columns import setting_columns

    trials = result.trials  # settings the same in every trial are in the lines below the table
    shown = trials.drop(columns=[c for c in setting_columns() if c in trials and trials[c].astype(str).nunique() <= 1])
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_colwidth", 40):
        print(shown.to_string(index=False))
    print(repr(result))
    if out is not None:
        try:
            result.trials.to_csv(out, index=False)
        except OSError as exc:
            raise UsageError(f"--csv {args.csv}: cannot write it ({exc.strerror or exc})") from None
        print(f"wrote {out}")
    return 0


DEMO_MODELS = ("resnet18", "bert")
# Enough iterations for a stable CPU median of tiny_conv without making the demo take minutes.
DEMO_MEASURE = {"warmup": 3, "iters": 20}


def cmd_demo(args: argparse.Namespace) -> int:
    out_dir = Path(args.output_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--output-dir {args.output_dir}: cannot create it ({exc.strerror or exc})") from None
    import_tensorrt_quietly(args)
    written: list[Path] = []
    inductor = hv.support.inductor()
    configs = {
        "tensorrt": hv.Config(priority=("tensorrt",)),
        "inductor-first": hv.Config(priority=("inductor", "tensorrt"), support=SupportMap({"inductor": inductor}),
                                    min_block_size=3),
    }
    for name in DEMO_MODELS:
        started = time.perf_counter()
        model, inputs = hv.zoo.load(name)
        for label, config in configs.items():
            part = hv.partition(model, inputs, config)
            print(f"\n===== {name} · {label} ({config.label()}) =====")
            print(part.report())
            for suffix in (".svg", ".png", ".html"):
                written.append(part.save(out_dir / f"{name}-{label}{suffix}"))
        print(f"[{name}: {time.perf_counter() - started:.1f}s]")

    model, inputs = hv.zoo.load("tiny_conv")
    grid = {"min_block_size": [1, 2, 3, 5], "priority": [("tensorrt", "inductor"), ("inductor",)]}
    base = hv.Config(support=SupportMap({"inductor": inductor}))
    import warnings

    with warnings.catch_warnings(record=True):  # the table's notes say it; the demo's output stays short
        warnings.simplefilter("always")
        table = hv.sweep(model, inputs, grid, base=base, measure=False if args.no_measure else DEMO_MEASURE,
                         progress=False)
    csv = out_dir / "tiny_conv-sweep.csv"
    table.to_csv(csv, index=False)
    written.append(csv)
    print("\n===== sweep: tiny_conv, min_block_size x priority (CPU latency where measurable) =====")
    print(_demo_table(table))
    noisy = noisy_rows(table)
    if noisy:
        print(f"note: {noisy} timing(s) had a coefficient of variation above 5% (a busy CPU); "
              "the CSV has p10/p90 and cv for each row.")
    print(f"all columns: {csv}")

    print("\nhierviz demo wrote:")
    for path in written:
        print(f"  {path}  ({path.stat().st_size:,} bytes)")
    return 0


def noisy_rows(table: Any) -> int:
    """How many rows of a sweep were timed with a coefficient of variation above NOISY_CV (none
    when it measured nothing)."""
    from hierviz.latency.timing import NOISY_CV

    if "cv" not in table.columns:
        return 0
    return int((table["cv"].astype(float) > NOISY_CV).sum())


def _demo_table(table: Any) -> str:
    """The sweep as a narrow table: settings, subgraph counts, latency, and a short note for the
    rows that could not be measured (the full messages are in the CSV's error column)."""
    import pandas as pd

    cols = ["priority", "min_block_size", "subgraphs", *[c for c in table.columns if c.startswith("subgraphs_")],
            "coverage", "median_ms", "speedup", "outputs_match"]
    shown = table[[c for c in cols if c in table.columns]].copy()
    if "error" in table.columns:
        shown["note"] = [("" if not isinstance(e, str) or not e else
                          "not measured: " + re.split(r"[,;:]", e)[0][:60]) for e in table["error"]]
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.float_format", lambda v: f"{v:.3g}"):
        return shown.to_string(index=False, na_rep="-")


# ------------------------------------------------------------------ parser
def _add_config_args(p: argparse.ArgumentParser) -> None:
    add_setting_options(p)  # one option per setting, from the settings table
    _add_debug(p)


def _add_model_args(p: argparse.ArgumentParser) -> None:
    """The setting flags, --ir and --target-device: a command that partitions MODEL (report, sweep, blockers,
    check)."""
    _add_config_args(p)
    add_ir_option(p)


def _add_debug(p: argparse.ArgumentParser) -> None:
    """--debug also after the subcommand (`hierviz report m --debug`); SUPPRESS keeps the
    top-level value when it is not given here."""
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show full tracebacks on errors")
    p.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="show what torch and Torch-TensorRT printed meanwhile (held back otherwise), and "
                        "before an error's one line its whole cause (a failed torch.export's full message)")


def whole_cause(exc: BaseException) -> str:
    """--verbose: what torch printed while it failed (CaptureError.torch_output), then the
    error's cause in full (torch's whole message)."""
    parts = [getattr(exc, "torch_output", "") or ""]
    if exc.__cause__ is not None:
        parts.append(f"{type(exc.__cause__).__name__}: {exc.__cause__}")
    return "\n".join(p.rstrip() for p in parts if p.strip())


def sentence(message: str) -> str:
    """`message` on one line, ending its sentence (a full stop unless it ends with one, ? or !)."""
    text = " ".join(message.split())
    return text if text.endswith((".", "?", "!")) else text + "."


class Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line with the fix, and exit code 2."""

    commands: tuple[str, ...] = ()  # the subcommands' names (build_parser sets them)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {sentence(f'{message} (see {self.prog} --help)')}\n")


def build_parser() -> Parser:
    parser = Parser(prog="hierviz", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    parser.add_argument("--verbose", action="store_true",
                        help="show what torch and Torch-TensorRT printed meanwhile (held back otherwise), and "
                             "before an error's one line its whole cause (a failed torch.export's full message)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="the main job on built-in models: reports, diagrams, HTML, sweep CSV")
    demo.add_argument("--output-dir", default="hierviz-demo", help="where to write (default ./hierviz-demo)")
    demo.add_argument("--no-measure", action="store_true", help="skip the CPU latency measurement in the sweep")
    _add_debug(demo)
    demo.set_defaults(func=cmd_demo)

    report = sub.add_parser("report", help="partition MODEL and print the dryrun-style report")
    report.add_argument("model", metavar="MODEL", help="a built-in model, file.py:function, or a saved .json partition")
    _add_model_args(report)
    report.add_argument("-o", "--output", metavar="FILE",
                        help="also save: .html report, .svg/.png/.pdf diagram, .dot, .json, or text")
    report.set_defaults(func=cmd_report)

    sweep = sub.add_parser("sweep", help="partition MODEL under a grid of settings into a CSV",
                           epilog=GRID_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sweep.add_argument("model", metavar="MODEL")
    sweep.add_argument("--grid", action="append", metavar="field=v1,v2",
                       help="a Config field and its values, separated by commas; repeat for more fields. "
                            "A list inside one value is joined by > or + (see below)")
    _add_model_args(sweep)
    sweep.add_argument("--measure", action="store_true", help="also measure latency (compiles each subgraph)")
    sweep.add_argument("--iters", type=positive, metavar="N",
                       help="timed runs per configuration with --measure (default 100)")
    sweep.add_argument("--warmup", type=non_negative, metavar="N",
                       help="untimed runs first with --measure (default 10)")
    sweep.add_argument("--csv", required=True, metavar="FILE", help="where to write the table")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")
    sweep.set_defaults(func=cmd_sweep)

    tune = sub.add_parser("tune", help="search settings for the lowest measured latency (Optuna)")
    tune.add_argument("model", metavar="MODEL")
    _add_model_args(tune)
    tune.add_argument("--budget", type=positive, default=20, metavar="N", help="at most N trials (default 20)")
    tune.add_argument("--timeout", type=float, metavar="S", help="start no new trial after S seconds")
    tune.add_argument("--iters", type=positive, metavar="N", help="timed runs per trial (default 30)")
    tune.add_argument("--warmup", type=non_negative, metavar="N", help="untimed runs first (default 3)")
    tune.add_argument("--seed", type=int, default=0, help="the sampler's seed (default 0)")
    tune.add_argument("--torch-compile", action="store_true", help="also time the whole model with torch.compile")
    tune.add_argument("--executor", metavar="ray|ADDRESS", help="run trials as Ray tasks (a local Ray, or a cluster)")
    tune.add_argument("--csv", metavar="FILE", help="write the trials there")
    tune.add_argument("--storage", metavar="URL", help="keep the trials in an Optuna database (sqlite:///tune.db); "
                      "run again to resume")
    tune.add_argument("--study-name", metavar="NAME", help="the study in --storage (default hierviz-tune)")
    tune.add_argument("--quiet", action="store_true", help="no progress bar")
    tune.set_defaults(func=cmd_tune)

    add_commands(sub, _add_model_args, _add_debug)

    zoo = sub.add_parser("zoo", help="list the built-in models")
    _add_debug(zoo)
    zoo.set_defaults(func=cmd_zoo)

    cache = sub.add_parser("cache", help="the capture and build caches on disk: info (folder, entries, size) or clear")
    cache.add_argument("action", choices=("info", "clear"))
    _add_debug(cache)
    cache.set_defaults(func=cmd_cache)

    info = sub.add_parser("info", help="versions, Torch-TensorRT and graphviz status")
    info.add_argument("--check", action="store_true",
                      help="also import Torch-TensorRT to check that it loads (about 5 s)")
    _add_debug(info)
    info.set_defaults(func=cmd_info)
    parser.commands = tuple(sub.choices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE

    import warnings

    with warnings.catch_warnings():  # the caller's warning display is back after the command
        one_line_warnings()
        try:
            code = int(args.func(args) or 0)
            if args.verbose and torch_output.held():  # what succeeded quietly printed meanwhile
                print(torch_output.held(), file=sys.stderr, end="")
            return code
        except (UsageError, HiervizError) as exc:
            if args.debug:
                if isinstance(exc, UserCodeError) and exc.__cause__ is not None:
                    raise exc.__cause__  # noqa: B904 - the user's own exception, with its own traceback
                raise
            if args.verbose:
                print(torch_output.held() + whole_cause(exc), file=sys.stderr)
            print(f"hierviz: error: {sentence(str(exc))}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
