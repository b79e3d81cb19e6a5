"""The `hierviz blockers`, `hierviz check` and `hierviz diff` commands: what to change, a
partition check for CI (exit 1 with the broken limits, 0 with one line), and the difference
between two saved partitions. `hierviz.cli.commands` adds them to its parser (`add_commands`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import hierviz as hv
from hierviz.cli.args import UsageError, non_negative, partition_or_saved, writable
from hierviz.partitioner.check import build_violations, failure_text, passed_text, violations
from hierviz.partitioner.counts import by_backend_text, count_text

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.building.builds import Builds

EXIT_CHECK_FAILED = 1
TABLE_COLUMNS = ["op", "kind", "nodes", "subgraphs_if_fixed", "subgraphs_saved", "accelerated_ops_gained", "verdict",
                 "change"]
MEASURED_COLUMNS = ["median_ms", "speedup", "speedup_low", "speedup_high", "measured"]
DIFF_COLUMNS = ["node", "op", "change", "backend_a", "backend_b", "tag_a", "tag_b"]


def _text(table: Any, columns: list[str]) -> str:
    import pandas as pd

    with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_colwidth", 70,
                           "display.float_format", lambda v: f"{v:.3g}"):
        # a saved partition's what-if columns hold None (object dtype), which na_rep leaves as "None"
        return table[columns].astype(object).where(table[columns].notna(), "-").to_string(index=False)


def _stats_line(part: hv.Partition | hv.MultiGraphPartition) -> str:
    s = part.stats
    return (f"{part.config.label()} ({part.engine} engine): {s['subgraphs']} subgraphs ({by_backend_text(s)}), "
            f"coverage {s['coverage']:.1%}, {count_text('accelerated_ops', s['accelerated_ops'])} of "
            f"{count_text('compute_ops', s['compute_ops'])}, "
            f"{s['boundary_tensors']} boundary tensors")


def cmd_blockers(args: argparse.Namespace) -> int:
    part = partition_or_saved(args)
    options = {"measure_options": {"on_error": "fallback"}} if args.fallback else {}
    if options and isinstance(part, hv.MultiGraphPartition):
        raise UsageError("--fallback is not available with --ir torch_compile yet; measure on a machine whose "
                         "backends all build, or leave --measure out")
    table = part.blockers(kind=args.kind.split(",") if args.kind else None, top=args.top, measure=args.measure,
                          device=args.device, **options)
    print(_stats_line(part))
    if table.empty:
        print("nothing keeps nodes out of the accelerated backends")
        return 0
    print(_text(table, TABLE_COLUMNS + (MEASURED_COLUMNS if args.measure else [])))
    if args.model.lower().endswith(".json"):
        print(f"{args.model} is a saved partition: counts only, no graph to re-partition; "
              f"give MODEL (a zoo name or file.py:function) for the what-if columns")
    return 0


def _by_backend(items: list[str] | None) -> dict[str, int] | None:
    if not items:
        return None
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise UsageError(f"--max-subgraphs-by-backend {item}: write backend=N, e.g. tensorrt=4")
        out[name.strip()] = int(value)
    return out


def cmd_check(args: argparse.Namespace) -> int:
    limits = (args.max_subgraphs, args.min_coverage, args.max_boundary_tensors, args.max_subgraphs_by_backend,
              args.like)
    if args.repro is not None and not args.build:
        raise UsageError(f"--repro {args.repro}: a repro is made of an engine that failed to build; add --build")
    if args.repro is not None and Path(args.repro).exists() and not Path(args.repro).is_dir():
        raise UsageError(f"--repro {args.repro}: that is a file; give a folder (it is made if missing)")
    if all(limit is None for limit in limits) and not args.build:  # a CI job whose limits went missing must not pass
        raise UsageError("check needs at least one limit: --max-subgraphs N, --min-coverage F, "
                         "--max-boundary-tensors N, --max-subgraphs-by-backend backend=N, --like saved.json "
                         "or --build")
    if args.like is not None:
        like = hv.load_partition(args.like)  # a wrong file fails before MODEL is partitioned
    else:
        like = None
    part = partition_or_saved(args)
    broken, kept = violations(part, max_subgraphs=args.max_subgraphs, min_coverage=args.min_coverage,
                              max_boundary_tensors=args.max_boundary_tensors,
                              max_subgraphs_by_backend=_by_backend(args.max_subgraphs_by_backend), like=like)
    builds = part.build() if args.build else None  # the build check's, kept for its notes and repros
    if builds is not None:
        built_broken, built_kept = build_violations(builds)
        broken += built_broken
        kept += built_kept
    if builds is not None and getattr(args, "verbose", False):
        for note in builds.notes:
            print(f"note: {note}")
    if broken:
        print(failure_text(part, broken))
    else:
        print(passed_text(part, kept))
    if args.repro is not None and builds is not None:
        write_repros(builds, Path(args.repro))
    return EXIT_CHECK_FAILED if broken else 0


def write_repros(builds: Builds, folder: Path) -> list[Path]:
    """`--repro DIR`: the smallest failing part of every engine that failed to convert or build,
    saved into DIR/<subgraph> (DIR/<graph>_<subgraph> across graphs) and run there in a fresh
    process; says where each went and whether it reproduced."""
    found = builds.with_repros().repros
    if not found:
        print(f"--repro {folder}: no engine failed to convert or build, so no repro was written")
        return []
    written = []
    for name, repro in found:
        out = folder / name.replace("/", "_")
        saved = repro.save(out)
        said = saved.outcome(log=str(out / "repro.log"))
        print(f"repro of {name}: {len(saved.nodes)} of {saved.of} nodes fail at {saved.stage}, "
              f"written to {out} (repro.py, repro.pt2, README.md); {said}")
        written.append(out)
    return written


def cmd_diff(args: argparse.Namespace) -> int:
    out = None
    if args.output:
        from hierviz.drawing.files import FORMATS  # loaded only when a diagram is asked for

        diagrams = [f for f in FORMATS if f != ".json"]  # Partition.save's formats that draw `against=`
        if Path(args.output).suffix.lower() not in diagrams:
            raise UsageError(f"-o {args.output}: the diff diagram is written as {', '.join(diagrams)}")
        out = writable(args.output, "-o")
    a, b = hv.load_partition(args.a), hv.load_partition(args.b)
    table = hv.diff(a, b)
    counts = table["change"].value_counts()
    print(f"a: {args.a}: {_stats_line(a)}")
    print(f"b: {args.b}: {_stats_line(b)}")
    if table.empty:
        print("no difference: every node runs on the same backend, grouped the same way")
    else:
        print(", ".join(f"{n} node(s) {change}" for change, n in counts.items()))
        print(_text(table, DIFF_COLUMNS))
    if out is not None:
        print(f"wrote {a.save(out, against=b, view=args.view)}")
    return 0


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; write a fraction such as 0.95") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction between 0 and 1; write 0.95 for 95%")
    return value


def add_commands(sub: Any, add_config_args: Callable[[argparse.ArgumentParser], None],
                 add_debug: Callable[[argparse.ArgumentParser], None]) -> None:
    """The three commands on `sub` (hierviz.cli.commands's subparsers)."""

    def model_command(name: str, help: str) -> argparse.ArgumentParser:
        """A command on one MODEL, with the setting flags."""
        parser = sub.add_parser(name, help=help)
        parser.add_argument("model", metavar="MODEL",
                            help="a built-in model, file.py:function, or a saved .json partition")
        add_config_args(parser)
        return parser

    blockers = model_command("blockers", "what keeps nodes out of TensorRT, improvements first, ranked by "
                                          "the subgraphs fixing it saves")
    blockers.add_argument("--kind", metavar="k,...", help="only these kinds: no converter, validator rejected, forced, "
                                                         "demoted, no backend")
    blockers.add_argument("--top", type=non_negative, default=3, metavar="N",
                          help="the last row joins the first N when that repeats no row (default 3; 0: no such row)")
    blockers.add_argument("--measure", action="store_true", help="also time each what-if that can run")
    blockers.add_argument("--device", metavar="cpu|cuda", help="where --measure runs (default: cuda if there)")
    blockers.add_argument("--fallback", action="store_true",
                          help="with --measure: run subgraphs whose backend cannot build here in eager PyTorch "
                               "(hv.measure's on_error='fallback'), e.g. TensorRT without a GPU")
    blockers.set_defaults(func=cmd_blockers)

    check = model_command("check", "fail (exit 1) when the partition breaks a limit: for CI")
    check.add_argument("--max-subgraphs", type=non_negative, metavar="N", help="at most N subgraphs")
    check.add_argument("--min-coverage", type=_fraction, metavar="F", help="at least this share of ops supported (0-1)")
    check.add_argument("--max-boundary-tensors", type=non_negative, metavar="N", help="at most N boundary tensors")
    check.add_argument("--max-subgraphs-by-backend", action="append", metavar="backend=N",
                       help="at most N subgraphs of that backend; repeat for more")
    check.add_argument("--like", metavar="saved.json", help="fail when worse than this saved partition")
    check.add_argument("--build", action="store_true",
                       help="convert and build every TensorRT engine here (no GPU needed with TensorRT-RTX); "
                            "fail when one does not build")
    check.add_argument("--repro", metavar="DIR",
                       help="with --build: save the smallest failing part of each failed engine into DIR/<subgraph> "
                            "(repro.py, repro.pt2, README.md, to file upstream) and run it in a fresh process")
    check.set_defaults(func=cmd_check)

    diff = sub.add_parser("diff", help="what differs between two saved partitions (part.save('x.json'))")
    diff.add_argument("a", metavar="A.json")
    diff.add_argument("b", metavar="B.json")
    diff.add_argument("-o", "--output", metavar="FILE", help="also write A drawn against B (.svg .png .pdf .dot .html)")
    diff.add_argument("--view", default="auto", help="the diagram's view (default auto)")
    add_debug(diff)
    diff.set_defaults(func=cmd_diff)


__all__ = ["add_commands", "cmd_blockers", "cmd_check", "cmd_diff", "EXIT_CHECK_FAILED", "write_repros"]
