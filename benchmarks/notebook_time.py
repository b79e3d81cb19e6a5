"""How long each tutorial notebook takes to run top to bottom, the wait a reader has.

    python benchmarks/notebook_time.py                 # every notebook in notebooks/
    python benchmarks/notebook_time.py 02_compare      # one

Each notebook runs in a fresh kernel of this interpreter (nbclient), in a temporary folder.
Printed: seconds per notebook beside the reader's budget (240 s on a 2-core CPU) and beside,
measured first in the same run, a one-cell notebook that only imports hierviz (the kernel's
start and the imports every notebook pays before hierviz does anything). This is a figure for
the closing note, not a test: a machine's speed decides it (the tests check what the notebooks
show, tests/test_notebooks.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbclient
import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
READER_BUDGET_S = 240


def run(path: Path | None) -> tuple[float, str | None]:
    """Seconds to run the notebook at `path` top to bottom (None: the import-only notebook),
    and its error, if it failed."""
    if path is None:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import hierviz as hv")])
    else:
        nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TMPDIR=tmp, MPLBACKEND="module://matplotlib_inline.backend_inline")
        client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                         resources={"metadata": {"path": tmp}})
        started = time.perf_counter()
        try:
            client.execute(env=env)
            error = None
        # printed beside the figure: a cell that raised or timed out, a kernel that died or did not start
        except (nbclient.exceptions.CellControlSignal, RuntimeError, OSError) as exc:
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return time.perf_counter() - started, error


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="notebook names (without .ipynb); default all")
    args = ap.parse_args()
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.names:
        paths = [p for p in paths if p.stem in args.names]
    print(f"{'notebook':<24} {'seconds':>8}  budget {READER_BUDGET_S} s  (python {sys.version.split()[0]})")
    floor, error = run(None)
    print(f"{'(import hierviz only)':<24} {floor:8.1f}  the start every notebook pays"
          + (f"  FAILED {error}" if error else ""), flush=True)
    for path in paths:
        seconds, error = run(path)
        verdict = "within" if seconds <= READER_BUDGET_S else "over"
        print(f"{path.name:<24} {seconds:8.1f}  {verdict}, {seconds - floor:.1f} s beyond the import-only notebook"
              + (f"  FAILED {error}" if error else ""), flush=True)


if __name__ == "__main__":
    main()
