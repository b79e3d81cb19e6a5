"""The package's shape, checked: data goes one way (imports follow the layer order of
docs/architecture.md, function-local ones included; below the CLI no module reads the package
facade; no import cycle between the parts, nor between modules with `if TYPE_CHECKING:` imports
counted; nothing outside the partitioner imports the engine or reads another module's private
names), heavy optional dependencies load on first use, and every module's docstring names its one
job. The one sanctioned upward import is a result's convenience (`Partition.render`) importing the
function of the layer that does its work inside the method, as pandas' DataFrame.to_parquet
imports pandas.io.parquet."""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hierviz"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "data" not in p.relative_to(PACKAGE).parts)
HEAVY = ("ipywidgets", "pandas", "tqdm", "graphviz", "matplotlib")


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


# hierviz's engine (hierviz/partitioner/engine/): its passes, the graph index and the plan types
# the engines share, read through Partition by everything outside the partitioner.
ENGINE_MODULES = ("engine",)


def is_engine_module(module: str) -> bool:
    return any(module == f"hierviz.partitioner.{m}" or module.startswith(f"hierviz.partitioner.{m}.")
               for m in ENGINE_MODULES)


def foreign_modules(module: ast.Module) -> set[str]:
    """The names a module binds to modules outside hierviz (`import torch`, `import numpy as np`,
    `from torch import fx`): an attribute read through one of them (`torch._ops`) is that library's,
    whatever private names hierviz's own modules define."""
    names: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name.split(".")[0]) for a in node.names
                      if not a.name.split(".")[0] == "hierviz"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] != "hierviz":
            names |= {a.asname or a.name for a in node.names}
    return names


def root_name(node: ast.expr) -> str | None:
    """The name an attribute chain starts from (`torch` of `torch._ops.OpOverload`)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def violations(path: Path) -> list[str]:
    """Engine imports outside the partitioner, private names imported from another hierviz
    module, and `obj._name` where `_name` is a private name some other hierviz module defines
    (read through anything but a library's module: `torch._ops` is torch's)."""
    me = module_name(path)
    mine = DEFINED[me]
    others = set().union(*(names for mod, names in DEFINED.items() if mod != me)) - mine
    in_partitioner = me.startswith("hierviz.partitioner")
    foreign = foreign_modules(tree(path))
    found = []
    for node in ast.walk(tree(path)):
        where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom) and node.module:
            if not in_partitioner and (is_engine_module(node.module) or (
                    node.module == "hierviz.partitioner" and any(a.name in ENGINE_MODULES for a in node.names))):
                found.append(f"{where} imports the engine")
            if node.module.startswith("hierviz") and node.module != me:
                found += [f"{where} imports private {a.name} from {node.module}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
        elif isinstance(node, ast.Import):
            if not in_partitioner and any(is_engine_module(a.name) for a in node.names):
                found.append(f"{where} imports the engine")
        elif isinstance(node, ast.Attribute) and node.attr in others and root_name(node.value) not in foreign:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{where} reads {ast.unparse(node)}")
    return found


def test_modules_found():
    names = {module_name(p) for p in MODULES}
    assert {"hierviz", "hierviz.partitioner.engine.hierviz_engine", "hierviz.partitioner.partition_result",
            "hierviz.drawing.views"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_engine_imports_or_private_reads_across_modules(path):
    assert violations(path) == []


def test_the_checker_catches_what_it_should(tmp_path):
    """The rule above is not vacuous: these lines are each flagged."""
    bad = tmp_path / "hierviz" / "drawing" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from hierviz.partitioner import engine\nfrom hierviz.latency.compiling.lift import _set_path\n"
                   "def f(p):\n    return p._result.index\n"
                   "from hierviz.partitioner.engine.passes.merging import merge\n"
                   "import torch\nfrom hierviz import trt\n"
                   "def g(q):\n    return torch._result, trt._result, q._result\n", encoding="utf-8")
    global ROOT
    old = ROOT
    try:
        ROOT = tmp_path
        DEFINED[module_name(bad)] = set()
        found = violations(bad)
    finally:
        ROOT = old
        DEFINED.pop("hierviz.drawing.bad", None)
    assert sum("imports the engine" in f for f in found) == 2
    assert any("imports private _set_path" in f for f in found)
    assert any("reads p._result" in f for f in found)
    # a library's module is its own (torch._result), a hierviz module or another object is not
    assert not any("reads torch._result" in f for f in found)
    assert any("reads trt._result" in f for f in found) and any("reads q._result" in f for f in found)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_says_what_it_is_for(path):
    """A module is split by responsibility, not by size: its docstring opens with the one job it
    does (a summary line of a few words at least)."""
    doc = ast.get_docstring(tree(path))
    first = (doc or "").strip().split("\n\n")[0]
    assert len(first.split()) >= 4, f"{path.relative_to(ROOT)} needs a docstring that names its one job"


# ----------------------------------------------------------------------------- the layer order
# docs/architecture.md: foundation < trt < support < settings < capturing < partitioner < building <
# drawing, latency < compare < widget < cli. A
# module imports only its own layer and those below (drawing and latency not each other); every
# import counts, function-local ones included (only `if TYPE_CHECKING:` blocks are skipped), except
# a convenience's: an import inside a method of a result class below (CONVENIENCES), which hands
# the result to the layer doing the work when the method is called. The
# package facade hierviz/__init__.py, which names everything public, is above them all: only the
# CLI may import it (`import hierviz`, `from hierviz import <public name>`).
LAYERS = {"trt": 1, "support": 2, "settings": 3, "capturing": 4, "partitioner": 5, "building": 6, "drawing": 7,
          "latency": 7, "compare": 8, "widget": 9, "cli": 10}
FACADE = "hierviz"
MODULE_NAMES = {module_name(p) for p in MODULES}
# module -> its result class whose methods are conveniences (`part.render()`, `part.build()`): each imports
# the function of the layer that does the work inside the method, so the module imports nothing above it
CONVENIENCES = {"hierviz.partitioner.partition_result": "Partition",
                "hierviz.partitioner.by_graph.multi_graph": "MultiGraphPartition"}
TYPE_CHECKING_BLOCK = "TYPE_CHECKING"  # where an import under `if TYPE_CHECKING:` at module level is


def layer_of(module: str) -> tuple[int, str]:
    """(rank, layer) of a hierviz module (errors, version, zoo and hierviz/foundation/ are the
    foundation); the facade ranks above everything."""
    parts = module.split(".")
    if len(parts) == 1:
        return 9, "the facade"
    if parts[1] not in LAYERS:
        return 0, "foundation"
    return LAYERS[parts[1]], parts[1]


def part_of(module: str) -> str:
    """The part a module belongs to: its subpackage (capturing, partitioner, drawing, trt, ...) or,
    for a top-level module, the module itself (errors, version, zoo)."""
    return module.split(".")[1]


def imports(path: Path, type_checking: bool = False) -> list[tuple[str, str, int]]:
    """(module imported, where: 'module' or the enclosing Class.function, line) for every hierviz
    import of a module, function-local ones included; `if TYPE_CHECKING:` blocks are skipped, or
    with `type_checking` counted too (where: 'TYPE_CHECKING' at module level).
    `from hierviz import x` is the submodule hierviz.x when there is one, else the facade."""
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, scope: tuple[str, ...], checking: bool = False) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                if type_checking:
                    visit(ast.Module(body=child.body, type_ignores=[]), scope, True)
                visit(ast.Module(body=child.orelse, type_ignores=[]), scope, checking)
                continue
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = (*scope, child.name)
            where = ".".join(scope) or (TYPE_CHECKING_BLOCK if checking else "module")
            if isinstance(child, ast.Import):
                found.extend((a.name, where, child.lineno) for a in child.names
                             if a.name == FACADE or a.name.startswith(FACADE + "."))
            elif isinstance(child, ast.ImportFrom) and child.module and (
                    child.module == FACADE or child.module.startswith(FACADE + ".")):
                for a in child.names:
                    sub = f"{child.module}.{a.name}"
                    found.append((sub if sub in MODULE_NAMES else child.module, where, child.lineno))
            visit(child, inner, checking)

    visit(tree(path), ())
    return found


def is_convenience(module: str, where: str) -> bool:
    """Whether an import at `where` in `module` is a convenience's: inside a method of its result class."""
    return "." in where and where.split(".")[0] == CONVENIENCES.get(module)


def upward_imports(path: Path) -> list[str]:
    """Imports against the layer order: of a layer above, of a sibling layer, or of the facade."""
    me = module_name(path)
    if me == FACADE:
        return []
    rank, layer = layer_of(me)
    bad = []
    for target, where, line in imports(path):
        if is_convenience(me, where):
            continue
        them = layer_of(target)
        if target == FACADE and layer != "cli":
            bad.append(f"{path.relative_to(ROOT)}:{line} ({where}) imports the package facade; below the CLI "
                       "import the module that defines the name")
        elif target != FACADE and (them[0] > rank or (them[0] == rank and them[1] != layer)):
            bad.append(f"{path.relative_to(ROOT)}:{line} ({where}) imports {target}, a layer above {layer}")
    return bad


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_layer_order(path):
    assert upward_imports(path) == []


def checked_source(tmp_path: Path, rel: str, source: str) -> list[str]:
    """upward_imports of a synthetic module written at hierviz/<rel> under tmp_path."""
    global ROOT
    bad = tmp_path / "hierviz" / rel
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text(source, encoding="utf-8")
    old = ROOT
    try:
        ROOT = tmp_path
        return upward_imports(bad)
    finally:
        ROOT = old


def test_the_layer_check_catches_an_upward_import(tmp_path):
    """Not vacuous: a function-local import of compare from latency is flagged; one under
    TYPE_CHECKING is not."""
    found = checked_source(tmp_path, "latency/bad.py",
                           '"""x."""\nfrom typing import TYPE_CHECKING\n'
                           "if TYPE_CHECKING:\n    from hierviz.compare import sweep\n"
                           "def f():\n    from hierviz.compare.sweep import sweep\n    return sweep\n")
    assert found == ["hierviz/latency/bad.py:6 (f) imports hierviz.compare.sweep, a layer above latency"]


def test_the_layer_check_catches_a_facade_import(tmp_path):
    """`from hierviz import explore` (or `import hierviz`) in the partitioner reads the facade, which
    imports the partitioner: flagged, at the top of a module or inside a function. A submodule
    imported as `from hierviz import support` is not the facade."""
    found = checked_source(tmp_path, "partitioner/bad.py",
                           '"""x."""\nfrom hierviz import support\nfrom hierviz import explore\n'
                           "def f():\n    import hierviz as hv\n    return hv.sweep\n")
    assert found == [
        "hierviz/partitioner/bad.py:3 (module) imports the package facade; below the CLI import the module "
        "that defines the name",
        "hierviz/partitioner/bad.py:5 (f) imports the package facade; below the CLI import the module that "
        "defines the name",
    ]
    assert checked_source(tmp_path, "cli/args.py", '"""x."""\nimport hierviz as hv\n') == []


def module_graph(modules: list[Path], type_checking: bool = False) -> dict[str, set[str]]:
    """module -> the hierviz modules it imports (a package's __init__ is the package's module),
    every import counted (function-local ones too; `if TYPE_CHECKING:` ones with `type_checking`)
    but a convenience's, the facade left out."""
    graph: dict[str, set[str]] = {}
    for path in modules:
        me = module_name(path)
        if me == FACADE:
            continue
        for target, where, _ in imports(path, type_checking):
            if target not in (FACADE, me) and not is_convenience(me, where):
                graph.setdefault(me, set()).add(target)
    return graph


def part_graph(modules: list[Path]) -> dict[str, set[str]]:
    """part -> the parts it imports, every import counted (function-local ones too), the facade left out."""
    graph: dict[str, set[str]] = {}
    for me, targets in module_graph(modules).items():
        for target in targets:
            if part_of(target) != part_of(me):
                graph.setdefault(part_of(me), set()).add(part_of(target))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_parts():
    """capturing, settings, support, trt, partitioner, drawing, latency, compare, widget, cli...: no two
    import each other, directly or through others, counting function-local imports."""
    graph = part_graph(MODULES)
    parts = {"partitioner", "drawing", "latency", "compare", "widget", "cli", "settings", "capturing", "trt"}
    assert parts <= set(graph)
    assert cycles(graph) == []


def string_lookups(path: Path) -> list[str]:
    """Calls of handler("..."): a convenience named by a string mypy cannot follow."""
    found = []
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "handler" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} looks up {node.args[0].value!r} by name")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_partitions_conveniences_are_imports_not_strings(path):
    """A Partition's conveniences import the function doing their work, never look it up by a string."""
    assert string_lookups(path) == []


def test_the_string_lookup_check_catches_one(tmp_path):
    bad = tmp_path / "hierviz" / "drawing" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text('"""x."""\nfrom hierviz.partitioner import registry\n'
                   'def f(p):\n    return registry.handler("render")(p)\n', encoding="utf-8")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = string_lookups(bad)
    finally:
        ROOT = saved
        tree.cache_clear()
    assert found == ["hierviz/drawing/bad.py:4 looks up 'render' by name"]


def test_no_import_cycle_between_modules():
    """Not even inside a part: no module imports one that imports it back, directly or through
    others, counting function-local imports (a cycle hidden behind one is still a cycle) and those
    under `if TYPE_CHECKING:` (a cycle only mypy follows is still one). A Partition's conveniences
    import the layer doing their work inside the method (CONVENIENCES), so partition_result.py
    imports nothing above it."""
    graph = module_graph(MODULES, type_checking=True)
    assert "hierviz.partitioner.partition_result" in graph
    assert cycles(graph) == []


def test_builds_import_repro_and_not_back():
    """hv.Builds makes its repros (Builds.repro() imports repro.py); repro.py makes a repro of one
    failed row and knows nothing of Builds: one direction, `if TYPE_CHECKING:` imports included."""
    builds, repro = PACKAGE / "building" / "builds.py", PACKAGE / "building" / "repro.py"
    assert "hierviz.building.repro" in {t for t, _, _ in imports(builds, type_checking=True)}
    assert "hierviz.building.builds" not in {t for t, _, _ in imports(repro, type_checking=True)}


def test_a_partition_imports_nothing_above_it_at_module_level():
    """partition_result.py and multi_graph.py reach drawing, latency and building only from inside
    a convenience: never at module level, nor under `if TYPE_CHECKING:`."""
    for module, cls in CONVENIENCES.items():
        path = ROOT / (module.replace(".", "/") + ".py")
        above = [(t, where) for t, where, _ in imports(path, type_checking=True)
                 if layer_of(t)[0] > layer_of(module)[0] and not is_convenience(module, where)]
        assert above == [], f"{module} imports a layer above it outside {cls}'s methods: {above}"


def test_the_module_cycle_check_counts_type_checking_imports(tmp_path):
    """Not vacuous: a cycle through an `if TYPE_CHECKING:` import is one; a convenience's import is not."""
    pkg = tmp_path / "hierviz" / "partitioner"
    pkg.mkdir(parents=True)
    (pkg / "partition_result.py").write_text('"""x."""\nfrom typing import TYPE_CHECKING\n'
                                             "if TYPE_CHECKING:\n    from hierviz.partitioner.report import r\n"
                                             "class Partition:\n    def report(self):\n"
                                             "        from hierviz.partitioner.tables import t\n")
    (pkg / "report.py").write_text('"""x."""\nfrom hierviz.partitioner.partition_result import Partition\n')
    (pkg / "tables.py").write_text('"""x."""\nfrom hierviz.partitioner.partition_result import Partition\n')
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        tree.cache_clear()
        paths = sorted(pkg.glob("*.py"))
        with_checking, without = cycles(module_graph(paths, type_checking=True)), cycles(module_graph(paths))
    finally:
        ROOT = saved
        tree.cache_clear()
    assert with_checking == [["hierviz.partitioner.partition_result", "hierviz.partitioner.report"]]
    assert without == []


def test_the_module_cycle_check_catches_a_function_local_one(tmp_path):
    pkg = tmp_path / "hierviz" / "partitioner"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""x."""\nfrom hierviz.partitioner.lower import f\n')
    (pkg / "lower.py").write_text('"""x."""\ndef f():\n    from hierviz.partitioner import g\n')
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        tree.cache_clear()
        found = cycles(module_graph(sorted(pkg.glob("*.py"))))
    finally:
        ROOT = saved
        tree.cache_clear()
    assert found == [["hierviz.partitioner", "hierviz.partitioner.lower"]]


def test_the_cycle_check_catches_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@functools.lru_cache(maxsize=None)
def top_level_imports() -> dict[str, set[str]]:
    """module -> what it imports at module level, `if TYPE_CHECKING:` blocks included (an import
    there names a module that importing this one at the top would make a cycle with)."""
    return {module_name(p): {t for t, where, _ in imports(p, type_checking=True)
                             if where in ("module", TYPE_CHECKING_BLOCK)} for p in MODULES}


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



# ----------------------------------------------------------------------------- the picture
# docs/architecture.md's picture of the layers is generated from the imports above; it must be
# the current one. `HIERVIZ_ACCEPT_ARCH=1 python -m pytest tests/test_architecture.py -k picture`
# rewrites it after a deliberate change (review the diff).
DOC = ROOT / "docs" / "architecture.md"
PICTURE_START = "<!-- the layers, generated from the imports by tests/test_architecture.py: do not edit -->"
PICTURE_END = "<!-- end of the generated picture -->"


def picture() -> str:
    """The layer order, then each part (highest layer first) with the parts it imports,
    function-local imports included."""
    graph = part_graph(MODULES)
    parts = set(graph) | {p for deps in graph.values() for p in deps}

    def rank(part: str) -> tuple[int, str]:
        return layer_of(f"hierviz.{part}")

    order: dict[int, list[str]] = {}
    for name, r in sorted(LAYERS.items(), key=lambda kv: kv[1]):
        order.setdefault(r, []).append(name)
    ranks = " < ".join(", ".join(dict.fromkeys(names)) for _, names in sorted(order.items()))
    lines = ["```", f"layers, lowest first: foundation < {ranks}", "(the facade hierviz/__init__.py is above "
             "them all; a part imports its own layer and those below)", ""]
    for part in sorted(parts, key=lambda p: (-rank(p)[0], p)):
        deps = sorted(graph.get(part, ()), key=lambda q: (-rank(q)[0], q))
        layer = rank(part)[1]
        name = part if layer != "foundation" else f"{part} (foundation)"
        lines.append(f"{name:<26} → {', '.join(deps) if deps else 'nothing of hierviz'}")
    lines.append("```")
    return "\n".join(lines)


def test_the_architecture_picture_is_drawn_from_the_imports():
    text = DOC.read_text(encoding="utf-8")
    assert PICTURE_START in text and PICTURE_END in text, "docs/architecture.md lost its generated picture"
    head, rest = text.split(PICTURE_START, 1)
    block, tail = rest.split(PICTURE_END, 1)
    now = "\n" + picture() + "\n"
    if os.environ.get("HIERVIZ_ACCEPT_ARCH"):
        DOC.write_text(head + PICTURE_START + now + PICTURE_END + tail, encoding="utf-8")
        block = now
    assert block == now, ("docs/architecture.md's picture is not the imports' (HIERVIZ_ACCEPT_ARCH=1 python -m "
                          "pytest tests/test_architecture.py -k picture rewrites it):\n" + picture())


def test_the_documented_layer_order_is_the_tests():
    """The order the rules section states is the one LAYERS encodes."""
    first = picture().splitlines()[1].removeprefix("layers, lowest first: ")
    assert first in " ".join(DOC.read_text(encoding="utf-8").split())


def test_the_widget_loads_tuning_only_when_asked():
    """Opening the widget's module imports neither hv.tune's modules nor Optuna: "find fastest"
    imports them when pressed."""
    code = ("import sys, hierviz.widget.explorer\n"
            "print(sorted(m for m in sys.modules if m.startswith(('hierviz.compare.tun', 'hierviz.compare.optuna', "
            "'optuna'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
