"""One row of the settings table: what a `Config` field carries in its metadata (how its value
is read from Python and from text, its text forms, its command-line flag, which engines take
every value of it). config.py declares the rows; every surface reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hierviz.errors import ConfigError


def same(value: Any) -> Any:
    """A value as it is (the default text and JSON forms)."""
    return value


def left_out(_value: Any) -> None:
    """No part of Config.label (the default)."""
    return None


@dataclass(frozen=True)
class Flag:
    """A setting's command-line option: `--name VALUE` (`metavar`), or a switch that sets True
    (`metavar` None). `read` turns the text into the value (default: the setting's read_text)."""

    help: str
    metavar: str | None = None
    name: str = ""
    read: Callable[[str], Any] | None = None


@dataclass(frozen=True)
class Setting:
    """One setting: the row a `Config` field carries (`dataclasses.field(metadata=row(...))`).

    `name`, `annotation` (the field's type, as text) and `default` come from the field itself;
    config.SETTINGS holds the rows with them filled in."""

    doc: str                      # one line: what it is
    parse: Callable[[Any], Any]   # a Python value -> the checked value (ConfigError otherwise)
    read_text: Callable[[str], Any] | None  # text -> a Python value for `parse` (None: no text form)
    show: Callable[[Any], Any] = same       # checked value -> its table cell (and tune's choice label)
    label: Callable[[Any], str | None] = left_out  # checked value -> its part of Config.label (None: left out)
    # its part of Config.label when that depends on other settings too (the whole Config; over `label`)
    label_of: Callable[[Any], str | None] | None = None
    to_json: Callable[[Any], Any] = same    # checked value -> its to_dict form
    from_json: Callable[[Any], Any] = same  # to_dict form -> a Python value for `parse`
    flag: Flag | None = None
    engines: tuple[str, ...] | None = None  # the engines that take every value (None: all); the others
    #                                         run it as compile_rules says
    head: bool = False            # its table column goes first, and only where it is not the default
    name: str = ""
    annotation: str = ""
    default: Any = None

    @property
    def option(self) -> str:
        """The command-line option: --min-block-size."""
        return (self.flag.name if self.flag is not None and self.flag.name else
                "--" + self.name.replace("_", "-"))

    def takes_every_value(self, engine: str) -> bool:
        """Whether `engine` runs this setting with any value (else compile_rules decides)."""
        return self.engines is None or engine in self.engines

    def from_text(self, text: Any) -> Any:
        """The Python value of this setting written as text (unchecked: `parse` checks it)."""
        if not isinstance(text, str):
            raise ConfigError.for_setting(self.name, f"expected text, got {type(text).__name__} {text!r}.")
        if self.read_text is None:
            raise ConfigError(f"{self.name} cannot be given as text; pass hv.support.* objects from Python "
                              "(or --inductor-support on the command line).")
        return self.read_text(text)

    def cell(self, value: Any) -> Any:
        """`value` (checked or as the user wrote it) as a table cell: as the parser reads it,
        or, when it cannot be read, as given (lists comma-joined)."""
        try:
            return self.show(self.parse(value))
        except ConfigError:
            if isinstance(value, (list, tuple, set, frozenset)):
                return ",".join(sorted(str(v) for v in value))
            return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)
