"""The `hierviz` command: its commands (commands.py), their flags (args.py), what they print
(output.py) and the partitions they load or make (partitions.py)."""

from hierviz.cli.commands import main

__all__ = ["main"]
