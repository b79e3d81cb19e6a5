"""MkDocs hook for the API reference: a page names a public name as `::: hv.NAME` (a name of
`hierviz.__all__`), and this hook writes the module that defines it in its place, so the reference
follows a module that moves. After the build, every name of `hierviz.__all__` must have been named
on some page: a public name added without its reference fails `make docs`."""

from __future__ import annotations

import inspect
import re
from typing import Any

from mkdocs.exceptions import PluginError

DIRECTIVE = re.compile(r"^::: hv\.(\w+)[ \t]*$", re.M)
_named: set[str] = set()


def _defined_at(name: str) -> str:
    """The dotted path mkdocstrings reads `hv.<name>` from."""
    import hierviz as hv

    if name not in hv.__all__:
        raise PluginError(f"::: hv.{name}: {name} is not in hierviz.__all__")
    obj = getattr(hv, name)
    if inspect.ismodule(obj):
        return obj.__name__
    return f"{obj.__module__}.{obj.__qualname__}"


def _directive(match: re.Match[str]) -> str:
    name = match.group(1)
    _named.add(name)
    return (f"::: {_defined_at(name)}\n"
            f"    options:\n"
            f"      heading: \"hv.{name}\"\n"
            f"      toc_label: \"hv.{name}\"")


def on_pre_build(config: Any) -> None:
    _named.clear()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return DIRECTIVE.sub(_directive, markdown)


def on_post_build(config: Any) -> None:
    import hierviz as hv

    missing = sorted(set(hv.__all__) - _named)
    if missing:
        raise PluginError("the API reference (docs/api/) names no `::: hv.NAME` for: " + ", ".join(missing))
