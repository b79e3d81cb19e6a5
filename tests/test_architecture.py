"""The package's shape, checked: data goes one way (imports follow the layer order, nothing
outside the partitioner imports the engine or reads another module's private names), heavy optional dependencies load on
first use, every module says what it is for, and no module grows past ~400 lines unless it is named,
with its reason, in LONG_MODULES (docs/architecture.md)."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hierviz"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "data" not in p.relative_to(PACKAGE).parts)
HEAVY = ("ipywidgets", "pandas", "tqdm", "graphviz", "matplotlib")
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.lru_cache(maxsize=None)
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def private_names_defined(path: Path) -> set[str]:
    """`_name`s a module defines: module-level functions, classes and variables, class
    attributes and methods, and `self._x` attributes it assigns."""
    names: set[str] = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            names.add(node.attr)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


DEFINED = {module_name(p): private_names_defined(p) for p in MODULES}


def violations(path: Path) -> list[str]:
    """Engine imports outside the partitioner, private names imported from another hierviz
    module, and `obj._name` where `_name` is a private name some other hierviz module defines."""
    me = module_name(path)
    mine = DEFINED[me]
    others = set().union(*(names for mod, names in DEFINED.items() if mod != me)) - mine
    in_partitioner = me.startswith("hierviz.partitioner")
    found = []
    for node in ast.walk(tree(path)):
        where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom) and node.module:
            if not in_partitioner and (node.module == "hierviz.partitioner.engine" or (
                    node.module == "hierviz.partitioner" and any(a.name == "engine" for a in node.names))):
                found.append(f"{where} imports the engine")
            if node.module.startswith("hierviz") and node.module != me:
                found += [f"{where} imports private {a.name} from {node.module}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
        elif isinstance(node, ast.Import):
            if not in_partitioner and any(a.name == "hierviz.partitioner.engine" for a in node.names):
                found.append(f"{where} imports the engine")
        elif isinstance(node, ast.Attribute) and node.attr in others:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{where} reads {ast.unparse(node)}")
    return found


def test_modules_found():
    names = {module_name(p) for p in MODULES}
    assert {"hierviz", "hierviz.partitioner.engine", "hierviz.partitioner.result", "hierviz.drawing.views"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_engine_imports_or_private_reads_across_modules(path):
    assert violations(path) == []


def test_the_checker_catches_what_it_should(tmp_path):
    """The rule above is not vacuous: these lines are each flagged."""
    bad = tmp_path / "hierviz" / "drawing" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from hierviz.partitioner import engine\nfrom hierviz.latency.lift import _set_path\n"
                   "def f(p):\n    return p._result.index\n", encoding="utf-8")
    global ROOT
    old = ROOT
    try:
        ROOT = tmp_path
        DEFINED[module_name(bad)] = set()
        found = violations(bad)
    finally:
        ROOT = old
        DEFINED.pop("hierviz.drawing.bad", None)
    assert any("imports the engine" in f for f in found)
    assert any("imports private _set_path" in f for f in found)
    assert any("reads p._result" in f for f in found)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_says_what_it_is_for(path):
    doc = ast.get_docstring(tree(path))
    assert doc and len(doc.split()) >= 4, f"{path.relative_to(ROOT)} needs a docstring saying its role"


# The modules allowed past MAX_LINES, each with the reason it stays one module.
LONG_MODULES = {
    "hierviz/partitioner/engine.py": "the algorithm's passes share the index and subgraph type and read in order",
    "hierviz/partitioner/result.py": "the one reader of the engine's result: Partition's questions and its record",
    "hierviz/widget/explorer.py": "the Explorer's whole public surface (properties, buttons, find fastest)",
}


def lines_of(path: Path) -> int:
    return path.read_text(encoding="utf-8").count("\n")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_stay_short(path):
    """A module over MAX_LINES lines is split, or named in LONG_MODULES with its reason."""
    rel = str(path.relative_to(ROOT))
    assert lines_of(path) <= MAX_LINES or rel in LONG_MODULES, (
        f"{rel} has {lines_of(path)} lines; split it (or name it in LONG_MODULES with the reason)")


def test_long_module_exceptions_are_current():
    """Every exception still exists and is still long: the list names no module that was split."""
    for rel in LONG_MODULES:
        assert (ROOT / rel).is_file(), f"{rel} is gone: remove it from LONG_MODULES"
        assert lines_of(ROOT / rel) > MAX_LINES, f"{rel} is short now: remove it from LONG_MODULES"


# ----------------------------------------------------------------------------- the layer order
# docs/architecture.md: foundation < partitioner < drawing, latency < explorer < cli. A module
# imports only its own layer and those below (drawing and latency not each other); the package
# facade hierviz/__init__.py, which names everything public, is outside the order.
LAYERS = {"partitioner": 1, "drawing": 2, "latency": 2, "compare": 3, "widget": 4, "cli": 5, "cli_args": 5}
# The Partition methods that hand a partition to drawing and latency: the named exceptions.
UPWARD_ALLOWED = {
    ("hierviz.partitioner.result", "Partition.render"),
    ("hierviz.partitioner.result", "Partition.save"),
    ("hierviz.partitioner.result", "Partition._repr_html_"),
    ("hierviz.partitioner.result", "Partition.compile"),
}
MODULE_NAMES = {module_name(p) for p in MODULES}


def layer_of(module: str) -> tuple[int, str] | None:
    """(rank, package) of a hierviz module (cli.py and cli_args.py are one layer); None for the facade."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    if parts[1] not in LAYERS:
        return 0, "foundation"
    return LAYERS[parts[1]], "cli" if parts[1].startswith("cli") else parts[1]


def imports(path: Path) -> list[tuple[str, str, int]]:
    """(module imported, where: 'module' or the enclosing Class.function, line) for every hierviz
    import of a module, function-local ones included; `if TYPE_CHECKING:` blocks are skipped."""
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(ast.Module(body=child.orelse, type_ignores=[]), scope)
                continue
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = (*scope, child.name)
            where = ".".join(scope) or "module"
            if isinstance(child, ast.Import):
                found.extend((a.name, where, child.lineno) for a in child.names if a.name.startswith("hierviz"))
            elif isinstance(child, ast.ImportFrom) and child.module and child.module.startswith("hierviz"):
                for a in child.names:
                    sub = f"{child.module}.{a.name}"
                    found.append((sub if sub in MODULE_NAMES else child.module, where, child.lineno))
            visit(child, inner)

    visit(tree(path), ())
    return found


def downward_imports(path: Path) -> list[str]:
    """Imports against the layer order, less the named exceptions."""
    me = layer_of(module_name(path))
    if me is None:
        return []
    bad = []
    for target, where, line in imports(path):
        them = layer_of(target)
        if them is None or (module_name(path), where) in UPWARD_ALLOWED:
            continue
        if them[0] > me[0] or (them[0] == me[0] and them[1] != me[1]):
            bad.append(f"{path.relative_to(ROOT)}:{line} ({where}) imports {target}, a layer above {me[1]}")
    return bad


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_layer_order(path):
    assert downward_imports(path) == []


def test_the_layer_exceptions_are_used():
    """Each named exception is still an upward import (the list names nothing stale)."""
    used = {(module_name(p), where) for p in MODULES for target, where, _ in imports(p)
            if (layer_of(target) or (0,))[0] > (layer_of(module_name(p)) or (9,))[0]}
    assert UPWARD_ALLOWED <= used, sorted(UPWARD_ALLOWED - used)


def test_the_layer_check_catches_an_upward_import(tmp_path):
    """Not vacuous: a function-local import of the explorer from latency is flagged; one under
    TYPE_CHECKING is not."""
    global ROOT
    bad = tmp_path / "hierviz" / "latency" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text('"""x."""\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hierviz.compare import sweep\n'
                   "def f():\n    from hierviz.compare.sweep import sweep\n    return sweep\n", encoding="utf-8")
    old = ROOT
    try:
        ROOT = tmp_path
        found = downward_imports(bad)
    finally:
        ROOT = old
    assert found == ["hierviz/latency/bad.py:6 (f) imports hierviz.compare.sweep, a layer above latency"]


@functools.lru_cache(maxsize=None)
def top_level_imports() -> dict[str, set[str]]:
    return {module_name(p): {t for t, where, _ in imports(p) if where == "module"} for p in MODULES}


def reachable(start: str, graph: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        for nxt in graph.get(m, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_function_local_imports_buy_something(path, fresh):
    """A function-local import of a module that `import hierviz` loads anyway, and that could be
    imported at the top without a cycle, buys nothing: it is imported at the top."""
    me = module_name(path)
    graph = top_level_imports()
    pointless = [f"{path.relative_to(ROOT)}:{line} ({where}) imports {target} inside a function"
                 for target, where, line in imports(path)
                 if where != "module" and target in fresh["loaded"] and target != me
                 and me not in reachable(target, graph) and me != "hierviz"]
    assert pointless == []


FRESH = """
import json, sys, torch
before = set(sys.modules)
import hierviz as hv
added = sorted(m for m in HEAVY if m in set(sys.modules) - before)
loaded = sorted(m for m in sys.modules if m.startswith("hierviz"))
hv.Config; hv.partition; hv.Partition
after_core = sorted(m for m in HEAVY if m in sys.modules)
facts = {"added": added, "loaded": loaded, "after_core": after_core, "to_json": hv.drawing.to_json.__name__,
         "measure": hv.latency.measure is hv.measure, "sweep": hv.compare.sweep is hv.sweep,
         "zoo": hv.zoo.names()[:1]}
print(json.dumps(facts))
"""


@pytest.fixture(scope="module")
def fresh() -> dict:
    """What a fresh interpreter sees: one subprocess for every import check below."""
    import json

    code = f"HEAVY = {HEAVY!r}\n" + FRESH
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_hierviz_leaves_heavy_dependencies_for_later(fresh):
    """`import hierviz` (after torch, which it needs anyway) imports none of the optional heavy
    packages; they load when a feature that needs them is first used."""
    assert fresh["added"] == []
    assert "pandas" not in fresh["after_core"] and "graphviz" not in fresh["after_core"]


def test_subpackages_reachable_before_import(fresh):
    """`hv.drawing.to_json` works in a fresh interpreter without `import hierviz.drawing`."""
    assert (fresh["to_json"], fresh["measure"], fresh["sweep"]) == ("to_json", True, True)
    assert len(fresh["zoo"]) == 1


def test_lazy_public_names_resolve():
    import hierviz as hv

    for name in hv.__all__:
        assert getattr(hv, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        hv.nope  # noqa: B018

