"""The public API, pinned: the signature of every name in `hv.__all__` (a class: its
constructor; a module: each name in its `__all__`) and of `Partition`'s public methods and
properties, against the expect file tests/expect/public_api.txt, as torch.fx pins its API.

A rename, a dropped or reordered argument or a changed default fails here until the snapshot
is updated on purpose:

    HIERVIZ_ACCEPT_API=1 python -m pytest tests/test_public_api.py

rewrites the expect file; review its diff (and /work/shared/API.md, which stays the promise)
before committing it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import re
import types
from pathlib import Path

import hierviz as hv

EXPECT = Path(__file__).parent / "expect" / "public_api.txt"
ACCEPT = "HIERVIZ_ACCEPT_API"


def signature(obj: object) -> str:
    """`obj`'s call signature as text, with no memory address in it; '' when it has none."""
    try:
        text = str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)


def constructor(cls: type) -> str:
    """A class's constructor signature; a dataclass whose __new__ checks the arguments first
    (hv.Config) shows its fields, as its generated __init__ takes them."""
    text = signature(cls)
    if dataclasses.is_dataclass(cls) and "*args" in text:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        text = re.sub(r" at 0x[0-9a-fA-F]+", "", str(inspect.Signature(params)))
    return text


def module_names(module: types.ModuleType) -> list[str]:
    """A module's public names: its `__all__`, else what it defines (not what it imports)."""
    if hasattr(module, "__all__"):
        return sorted(module.__all__)
    return sorted(n for n, v in vars(module).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)
                  and getattr(v, "__module__", module.__name__) == module.__name__)


def describe(name: str, obj: object) -> list[str]:
    if isinstance(obj, types.ModuleType):
        lines = []
        for n in module_names(obj):
            member = getattr(obj, n)
            if inspect.isclass(member):
                lines.append(f"{name}.{n}{constructor(member)}")
            elif callable(member):
                lines.append(f"{name}.{n}{signature(member)}")
            else:
                lines.append(f"{name}.{n}: {type(member).__name__}")
        return lines
    if inspect.isclass(obj):
        kind = "exception" if issubclass(obj, BaseException) else "class"
        return [f"{kind} {name}{constructor(obj)}"]
    if callable(obj):
        return [f"def {name}{signature(obj)}"]
    return [f"{name}: {type(obj).__name__}"]


def partition_members() -> list[str]:
    lines = []
    for n, member in sorted(vars(hv.Partition).items()):
        if n.startswith("_") and n != "_repr_html_":
            continue
        if isinstance(member, (property, functools.cached_property)):
            lines.append(f"Partition.{n}: property")
        elif callable(member):
            lines.append(f"Partition.{n}{signature(getattr(hv.Partition, n))}")
    return lines


def snapshot() -> str:
    lines = [f"# hv.__all__ ({len(hv.__all__)} names) and Partition's public members; see tests/test_public_api.py"]
    for name in sorted(hv.__all__):
        lines += describe(name, getattr(hv, name))
    lines += partition_members()
    return "\n".join(lines) + "\n"


def test_the_public_api_matches_its_snapshot():
    now = snapshot()
    if os.environ.get(ACCEPT):
        EXPECT.parent.mkdir(parents=True, exist_ok=True)
        EXPECT.write_text(now, encoding="utf-8")
    expected = EXPECT.read_text(encoding="utf-8")
    assert now == expected, (
        f"the public API changed. If on purpose, run `{ACCEPT}=1 python -m pytest tests/test_public_api.py` and "
        "review the diff of tests/expect/public_api.txt (and /work/shared/API.md).")


def test_the_snapshot_sees_a_dropped_argument(monkeypatch):
    """Not vacuous: a public function losing an argument changes the snapshot."""
    before = snapshot()

    def render(self, view="auto"):  # focus=, max_nodes=, ... dropped
        return None

    monkeypatch.setattr(hv.Partition, "render", render)
    after = snapshot()
    assert before != after and "Partition.render(self, view='auto')" in after
