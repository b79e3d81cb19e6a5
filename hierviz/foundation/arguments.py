"""Checks of a caller's arguments that many functions share, each with one message."""

from __future__ import annotations

from typing import Any

from hierviz.errors import ConfigError, HiervizError


def check_bool(value: Any, what: str, error: type[HiervizError] = ConfigError) -> bool:
    """`value` when it is True or False; else `error` saying "<what> is True or False, not <type>
    <value>" (a flag given 'no', 1 or None is refused, not read as true or false)."""
    if isinstance(value, bool):
        return value
    raise error(f"{what} is True or False, not {type(value).__name__} {value!r:.40}.")


__all__ = ["check_bool"]
