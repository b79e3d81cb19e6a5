"""The tutorial notebooks: stored clean, in sync with scripts/make_notebooks.py, and each one runs
top to bottom on a CPU with nbclient, producing the rich outputs a reader expects.

The notebooks run in copies inside a temporary folder (so nothing is written into the
repository), two at a time, in kernels of this interpreter: `JUPYTER_PATH` puts this
environment's kernelspecs first, and a check cell asserts the kernel's `sys.prefix`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
NoSuchKernel = pytest.importorskip("jupyter_client.kernelspec").NoSuchKernel  # nbclient brings jupyter_client

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = ("01_explore.ipynb", "02_compare.ipynb", "03_export.ipynb", "04_your_model.ipynb", "05_build.ipynb")
CELL_TIMEOUT_S = 300
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
PREFIX_MARK = "hierviz-kernel-prefix="


def load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_notebooks", ROOT / "scripts" / "make_notebooks.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# ------------------------------------------------------------------ stored notebooks
def test_every_promised_notebook_exists() -> None:
    assert sorted(p.name for p in NOTEBOOK_DIR.glob("*.ipynb")) == sorted(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_stored_without_outputs(name: str) -> None:
    nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{name}: a cell is stored with outputs: {cell.source[:60]!r}"
            assert cell.execution_count is None, f"{name}: a cell is stored with an execution count"


def test_in_sync_with_generator(tmp_path: Path) -> None:
    generator = load_generator()
    for name in NOTEBOOKS:
        expected = generator.text_of(generator.build(name))
        stored = (NOTEBOOK_DIR / name).read_text(encoding="utf-8")
        assert stored == expected, f"{name} differs from scripts/make_notebooks.py: run it to regenerate"


# ------------------------------------------------------------------ execution
def kernel_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    share = str(Path(sys.prefix) / "share" / "jupyter")
    env["JUPYTER_PATH"] = os.pathsep.join([share, *filter(None, [env.get("JUPYTER_PATH")])])
    env["TMPDIR"] = str(tmp)          # 03_export writes into tempfile.mkdtemp()
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env.setdefault("PYTHONWARNINGS", "ignore")
    return env


def execute(name: str, workdir: Path) -> dict[str, Any]:
    """Run a copy of the notebook in `workdir`; returns the executed notebook (or the error)."""
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(NOTEBOOK_DIR / name, workdir / name)
    nb = nbformat.read(workdir / name, as_version=4)
    check = nbformat.v4.new_code_cell(f"import sys; print({PREFIX_MARK!r} + sys.prefix)")
    check.id = "hierviz-test-prefix"
    nb.cells.insert(0, check)
    env = kernel_env(workdir)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(workdir)}})
    error = None
    try:
        client.execute(env=env)
    # what nbclient raises (a cell's error, a cell or kernel start-up timeout, a dead kernel as a
    # RuntimeError) or a missing kernelspec: reported by the test that owns the notebook
    except (nbclient.exceptions.CellExecutionError, TimeoutError, RuntimeError, NoSuchKernel) as exc:
        error = exc
    return {"nb": nb, "error": error, "workdir": workdir}


@pytest.fixture(scope="session")
def executed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every notebook executed once, two at a time (the kernels mostly wait on each other's
    start-up and imports, so two workers overlap well on a two-core machine)."""
    base = tmp_path_factory.mktemp("notebooks")
    # The kernelspec lookup happens in this process: make this environment's spec win.
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = kernel_env(base)["JUPYTER_PATH"]
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {name: pool.submit(execute, name, base / name.split(".")[0]) for name in NOTEBOOKS}
            return {name: fut.result() for name, fut in futures.items()}
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old


def outputs(nb: Any) -> list[tuple[int, Any]]:
    return [(i, out) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for out in cell.get("outputs", [])]


def rich(nb: Any, mime: str) -> list[Any]:
    return [out["data"][mime] for _, out in outputs(nb)
            if out.get("output_type") in ("execute_result", "display_data") and mime in out.get("data", {})]


def stdout(nb: Any) -> str:
    return "".join(out.get("text", "") for _, out in outputs(nb)
                   if out.get("output_type") == "stream" and out.get("name") == "stdout")


def assert_ran_cleanly(name: str, result: dict[str, Any]) -> Any:
    nb = result["nb"]
    if result["error"] is not None:
        pytest.fail(f"{name} failed to run: {type(result['error']).__name__}: {result['error']}")
    errors = [(i, out) for i, out in outputs(nb) if out.get("output_type") == "error"]
    assert not errors, f"{name}: cell {errors[0][0]} raised {errors[0][1]['ename']}: {errors[0][1]['evalue']}"
    tracebacks = [out["text"] for _, out in outputs(nb) if out.get("output_type") == "stream"
                  and out.get("name") == "stderr" and "Traceback" in out.get("text", "")]
    assert not tracebacks, f"{name}: a traceback on stderr:\n{tracebacks[0][:2000]}"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.execution_count is not None, f"{name}: a cell did not run: {cell.source[:60]!r}"
    assert f"{PREFIX_MARK}{sys.prefix}" in stdout(nb), \
        f"{name} ran in a kernel of another Python, not {sys.prefix}: {stdout(nb)[:300]}"
    return nb


def _builds_here() -> bool:
    """Whether TensorRT engines build on this machine (TensorRT-RTX builds them on the CPU)."""
    from hierviz import trt

    return trt.available() and trt.builds_without_gpu()


def partition_htmls(nb: Any) -> list[str]:
    return [h for h in rich(nb, "text/html") if "hv.Partition" in h and "<svg" in h]


def dataframes(nb: Any) -> list[str]:
    return [h for h in rich(nb, "text/html") if 'class="dataframe' in h]


def assert_svg(text: str | list[str]) -> ET.Element:
    root = ET.fromstring("".join(text) if isinstance(text, list) else text)
    assert root.tag.endswith("svg")
    return root


@pytest.mark.slow
@pytest.mark.notebook
def test_01_explore(executed: dict[str, dict[str, Any]]) -> None:
    nb = assert_ran_cleanly("01_explore.ipynb", executed["01_explore.ipynb"])
    widgets = rich(nb, WIDGET_MIME)
    assert len(widgets) >= 2, "the resnet50 and bert explorers are not displayed as widgets"
    assert all(w.get("model_id") for w in widgets)
    assert partition_htmls(nb), "the resnet50 partition is not displayed as a diagram"
    assert dataframes(nb), "no DataFrame (history, ops, summary) is displayed"
    assert "mbs=15" in stdout(nb) and "mbs=5" in stdout(nb)
    history = [h for h in dataframes(nb) if "boundary_tensors" in h]
    assert history, "explorer.history is not shown"
    module_views = [svg for svg in rich(nb, "image/svg+xml") if "module view" in svg]
    assert len(module_views) >= 2, "BERT's module view and its diff diagram are not displayed"
    assert any("layer.0\u20131 \u00d72" in svg for svg in module_views), "BERT's layers are not rolled up"
    assert any("\u00b7 diff: " in svg for svg in module_views), "the diff diagram is not drawn"


@pytest.mark.slow
@pytest.mark.notebook
def test_02_compare(executed: dict[str, dict[str, Any]]) -> None:
    nb = assert_ran_cleanly("02_compare.ipynb", executed["02_compare.ipynb"])
    frames = dataframes(nb)
    assert len(frames) >= 5, f"expected the sweep, pivot, filter, latency, diff tables; got {len(frames)}"
    assert any("median_ms" in f for f in frames), "the measured sweep has no latency column"
    assert any("backend_a" in f for f in frames), "hv.diff's table is not shown"
    assert len(rich(nb, "image/png")) >= 2, "the two plots are not drawn"


@pytest.mark.slow
@pytest.mark.notebook
def test_03_export(executed: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    nb = assert_ran_cleanly("03_export.ipynb", executed["03_export.ipynb"])
    svgs = rich(nb, "image/svg+xml")
    assert len(svgs) >= 2, "the collapsed and focus views are not displayed as SVG"
    for svg in svgs:
        assert_svg(svg)
    assert rich(nb, "image/png"), "the saved PNG is not displayed"
    assert any("<iframe" in h for h in rich(nb, "text/html")), "the HTML report is not shown"
    text = stdout(nb)
    out_dirs = list(executed["03_export.ipynb"]["workdir"].glob("hierviz-export-*"))
    assert len(out_dirs) == 1, "the notebook does not write into one fresh temporary folder"
    for suffix in (".svg", ".png", ".pdf", ".dot", ".json", ".html"):
        written = out_dirs[0] / f"resnet18-inductor-first{suffix}"
        assert written.is_file() and written.stat().st_size > 0, f"{written.name} was not written"
        assert f"{written.name:32} {written.stat().st_size:>10,} bytes" in text, f"{written.name}'s size is not shown"
    assert "Dry-Run Results" in text
    assert any("module view" in svg for svg in svgs), "the module view is not displayed"
    assert any("of time" in svg for svg in svgs), "the measured time is not drawn on the diagram"
    assert "resnet18.model_explorer.json [('modules', " in text


@pytest.mark.slow
@pytest.mark.notebook
def test_04_your_model(executed: dict[str, dict[str, Any]]) -> None:
    nb = assert_ran_cleanly("04_your_model.ipynb", executed["04_your_model.ipynb"])
    shown = partition_htmls(nb)
    assert len(shown) >= 2, "the partitions are not displayed as diagrams"
    assert dataframes(nb), "ops() / summary() are not displayed"
    text = stdout(nb)
    assert "no support in any backend" in text, "reason_of(erfinv) is not printed"
    assert "runs in inductor" in text, "moving erfinv to inductor is not shown"
    assert "(9, 64) True" in text, "the split module does not run with another batch size"
    summary = next(h for h in dataframes(nb) if "input_shapes" in h)
    assert "[s" in summary, "the dynamic batch dimension does not appear in the shapes"


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.skipif(not _builds_here(), reason="needs TensorRT-RTX, which builds engines on the CPU")
def test_05_build(executed: dict[str, dict[str, Any]]) -> None:
    nb = assert_ran_cleanly("05_build.ipynb", executed["05_build.ipynb"])
    text = stdout(nb)
    assert "<hv.Builds: 1/1 engines built, " in text, "resnet18's engine is not built"
    frames = dataframes(nb)
    profiles = [f for f in frames if "profile" in f]
    assert profiles and "x: (1,3,224,224) → (2,3,224,224) → (8,3,224,224)" in profiles[0], \
        "the dynamic batch's optimization profile is not shown"
    assert "_run_on_acc_tensorrt_0: failed at build: " in text, "gpt2's failed engine is not said"
    assert "fix: torch_executed_ops=['aten.split.Tensor']" in text, "gpt2's fix is not said"
    assert "<hv.Builds: 3/3 engines built, " in text, "the fixed partition's engines are not built"
    assert "<hv.Repro: " in text and "verified" in text, "the repro is not found, saved and run"
    out_dirs = list(executed["05_build.ipynb"]["workdir"].glob("hierviz-repro-*"))
    assert len(out_dirs) == 1, "the notebook does not write the repro into one fresh temporary folder"
    assert sorted(p.name for p in out_dirs[0].iterdir()) == ["README.md", "repro.log", "repro.pt2", "repro.py"]
    for name in ("README.md", "repro.py", "repro.pt2"):
        assert f"{name:12} {(out_dirs[0] / name).stat().st_size:>10,} bytes" in text, f"{name}'s size is not shown"
    assert "### Versions" in text, "the issue text is not shown"
    svgs = rich(nb, "image/svg+xml")
    assert len(svgs) >= 2, "gpt2's pictures are not displayed"
    assert any("engine fails at build" in svg for svg in svgs), "the picture does not mark the failed engine"
    assert any("the smallest failing part: " in svg for svg in svgs), "the picture does not name the repro"
