"""Every module path named in docs/, the README, CONTRIBUTING.md and hierviz's docstrings exists: a file
path (`hierviz/latency/timing.py`, `tests/widget/test_widget.py`, a bare `compiling.py`) names a
file of this repository, a folder path (`hierviz/partitioner/engine/passes/`, a bare `benchmarks/`) a
folder of it, and a dotted name (`hierviz.settings.config.SETTINGS`) a module and a name in it. Renaming
a module or a package without mending what names it fails here."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HIERVIZ = ROOT / "hierviz"
FILE = re.compile(r"(?<![\w./-])((?:[A-Za-z_][\w-]*/)*[A-Za-z_][\w-]*\.(?:py|ipynb))\b")
FOLDER = re.compile(r"(?<![\w./-])((?:[A-Za-z_][\w-]*/)+)(?![\w.-])")
DOTTED = re.compile(r"(?<![\w.])(hierviz(?:\.[A-Za-z_]\w*)+)")
# Files the text names that are not this repository's: upstream's sources (torch's and torchvision's, and
# torch_tensorrt's by their path in its package) and a user's own files in examples.
UPSTREAM = ("torch/", "torch_tensorrt/", "torchvision/", "dynamo/")
NOT_OURS = {
    "graph_builder.py",         # Model Explorer's graph format (google-ai-edge/model-explorer)
    "file.py", "path/to/file.py", "my_model.py", "model.py", "test_partition.py",  # a user's files
}
# Folders the text names that are not in the repository: what `make` and hierviz write (gitignored),
# and a user's own
NOT_OUR_FOLDERS = {"hierviz-demo/", "site/"}
# docs/architecture.md's example of a forbidden import; the file a compiled model's folder holds (deploy.py)
EXAMPLE_MODULES = {"hierviz.x", "hierviz.json"}


def _texts() -> list[tuple[Path, str]]:
    """(where, text) of every doc page, the README and every docstring of hierviz."""
    found = [(p, p.read_text()) for p in sorted((ROOT / "docs").rglob("*.md"))]
    found += [(ROOT / name, (ROOT / name).read_text()) for name in ("README.md", "CONTRIBUTING.md")]
    for path in sorted(HIERVIZ.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    found.append((path, doc))
    return found


def _repo_files() -> tuple[set[str], set[str]]:
    """(every file's path from the repository root, every file's name)."""
    paths = {str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
             if p.is_file() and not {".venv", ".git", "__pycache__"} & set(p.parts)}
    return paths, {Path(p).name for p in paths}


def _repo_folders(paths: set[str]) -> tuple[set[str], set[str]]:
    """(every folder holding a file, from the repository root; every such folder's name)."""
    folders = {str(parent) for p in paths for parent in Path(p).parents if str(parent) != "."}
    return folders, {Path(f).name for f in folders}


def _file_exists(path: str, where: Path, paths: set[str], names: set[str]) -> bool:
    """A bare name is some file of the repository; a path is one from the root, from hierviz/,
    from the naming file's folder or from one of hierviz's packages."""
    if "/" not in path:
        return path in names
    bases = [ROOT, HIERVIZ, where.parent, *(d for d in HIERVIZ.iterdir() if d.is_dir())]
    return any(str((base / path).resolve().relative_to(ROOT)) in paths for base in bases
               if (base / path).resolve().is_relative_to(ROOT))


def _names_ours(path: str, names: set[str]) -> bool:
    """A folder path is about this repository when it starts at one of its folders (`hierviz/`,
    `partitioner/`, `tests/`); `artifacts/tensorrt/` in a compiled model's folder, or `g1/` in a node
    name, is not."""
    return path.split("/", 1)[0] in names


def _folder_exists(path: str, where: Path, folders: set[str], names: set[str]) -> bool:
    """A bare `name/` is some folder of the repository; a longer path one from the root, from hierviz/,
    from the naming file's folder or from one of hierviz's packages."""
    path = path.rstrip("/")
    if "/" not in path:
        return path in names
    bases = [ROOT, HIERVIZ, where.parent, *(d for d in HIERVIZ.iterdir() if d.is_dir())]
    return any(str((base / path).resolve().relative_to(ROOT)) in folders for base in bases
               if (base / path).resolve().is_relative_to(ROOT))


def _dotted_exists(name: str) -> bool:
    """`hierviz.a.b.c`: its longest prefix that is a module, and the next part a name in it."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:
            spec = None
        if spec is not None:
            return cut == len(parts) or hasattr(importlib.import_module(module), parts[cut])
    return False


def _missing() -> list[str]:
    paths, names = _repo_files()
    folders, folder_names = _repo_folders(paths)
    missing = []
    for where, text in _texts():
        place = str(where.relative_to(ROOT))
        missing += [f"{place}: {m}" for m in FILE.findall(text)
                    if m not in NOT_OURS and not m.startswith(UPSTREAM) and not _file_exists(m, where, paths, names)]
        missing += [f"{place}: {m}" for m in FOLDER.findall(text)
                    if m not in NOT_OUR_FOLDERS and not m.startswith(UPSTREAM) and _names_ours(m, folder_names)
                    and not _folder_exists(m, where, folders, folder_names)]
        missing += [f"{place}: {m}" for m in DOTTED.findall(text)
                    if m not in EXAMPLE_MODULES and not _dotted_exists(m)]
    return sorted(set(missing))


def test_every_module_path_named_in_docs_and_docstrings_exists() -> None:
    assert _missing() == []


def test_the_scan_sees_a_missing_path(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A docstring naming a file that is gone, or a dotted name that is gone, is listed."""
    paths, names = _repo_files()
    assert not _file_exists("explorer/controls.py", HIERVIZ / "widget" / "controls.py", paths, names)
    assert not _file_exists("widget.py", HIERVIZ / "widget" / "panels.py", paths, names)
    assert _file_exists("controls.py", HIERVIZ / "widget" / "panels.py", paths, names)
    assert _file_exists("hierviz/widget/controls.py", ROOT / "docs" / "architecture.md", paths, names)
    assert _dotted_exists("hierviz.settings.config.SETTINGS")
    assert not _dotted_exists("hierviz.settings.config.add_setting")
    assert not _dotted_exists("hierviz.latency.cache")


def test_the_scan_sees_a_missing_folder() -> None:
    """A folder path that is gone (the README once named `hierviz/partitioner/passes/`) is listed;
    one that exists, from the root or from a package, is not."""
    folders, names = _repo_folders(_repo_files()[0])
    readme = ROOT / "README.md"
    assert FOLDER.findall("the passes in `hierviz/partitioner/passes/` run") == ["hierviz/partitioner/passes/"]
    assert not _folder_exists("hierviz/partitioner/passes/", readme, folders, names)
    assert not _folder_exists("no_such_folder/", readme, folders, names)
    assert _folder_exists("hierviz/partitioner/engine/passes/", readme, folders, names)
    assert _folder_exists("engine/passes/", HIERVIZ / "partitioner" / "__init__.py", folders, names)
    assert _folder_exists("benchmarks/", readme, folders, names)
    assert _names_ours("hierviz/partitioner/passes/", names) and _names_ours("engine/passes/", names)
    assert not _names_ours("artifacts/tensorrt/", names)
    assert FOLDER.findall("tensorrt/inductor and https://github.com/pytorch/TensorRT/") == []
