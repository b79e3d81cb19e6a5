"""Shared fixtures: zoo models and their captures, built once per test session.

    def test_something(zoo_cache):
        model, inputs = zoo_cache.load("resnet18")
        gm = zoo_cache.capture("resnet18")      # hv.capture, at most once per session

    def test_cli(run_python):
        proc = run_python("import hierviz; print(hierviz.__version__)")
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import types
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

# The capture cache (hierviz.capturing.disk_cache) of this test session: a temporary folder, never
# the user's own cache, set before anything captures; subprocesses inherit it.
TEST_CACHE_DIR = tempfile.mkdtemp(prefix="hierviz-test-cache-")
os.environ["HIERVIZ_CACHE_DIR"] = TEST_CACHE_DIR
atexit.register(shutil.rmtree, TEST_CACHE_DIR, True)
# plots draw off screen, in this process and in the ones tests start
os.environ.setdefault("MPLBACKEND", "Agg")

# the small model, its capture and the fake or scripted measuring of tests/widget and tests/compare;
# the writers (one killed, one running) of the tests of the caches' temp files
pytest_plugins = ["tests.small_net", "tests.disk_helpers"]

ROOT = Path(__file__).resolve().parents[1]


class ZooCache:
    """Zoo models, their eager outputs and their captures, each made at most once.

    `state_before_capture(name)` is a copy of the model's state_dict taken just before its
    capture, so tests can check that capture left the model untouched.
    """

    def __init__(self) -> None:
        self._models: dict[str, tuple[torch.nn.Module, tuple]] = {}
        self._eager: dict[str, Any] = {}
        self._captures: dict[str, torch.fx.GraphModule] = {}
        self._states: dict[str, dict[str, torch.Tensor]] = {}

    def load(self, name: str) -> tuple[torch.nn.Module, tuple]:
        if name not in self._models:
            from hierviz import zoo

            self._models[name] = zoo.load(name)
        return self._models[name]

    def eager(self, name: str) -> Any:
        """The model's own output on its example inputs."""
        if name not in self._eager:
            model, inputs = self.load(name)
            with torch.no_grad():
                self._eager[name] = model(*inputs)
        return self._eager[name]

    def capture(self, name: str) -> torch.fx.GraphModule:
        if name not in self._captures:
            import hierviz as hv

            model, inputs = self.load(name)
            self._states[name] = {k: v.detach().clone() for k, v in model.state_dict().items()}
            self._captures[name] = hv.capture(model, inputs)
        return self._captures[name]

    def state_before_capture(self, name: str) -> dict[str, torch.Tensor]:
        self.capture(name)
        return self._states[name]


@pytest.fixture(autouse=True)
def _cache_writes_end_with_their_test() -> Any:
    """The build cache's writes finished behind a test's builds (hierviz.foundation.writes_behind)
    end with that test: none lands in the next test's folder or patches."""
    yield
    from hierviz.foundation import writes_behind

    writes_behind.wait_all()


@pytest.fixture(scope="session")
def zoo_cache() -> ZooCache:
    return ZooCache()


DETECTION = ("fasterrcnn_mobilenet_v3_large_320_fpn", "ssdlite320_mobilenet_v3_large")


class DetectionModels:
    """torchvision's detection models that torch.export rejects (random weights, one 3x160x160
    image), and their graph-by-graph captures (hv.capture(..., ir="torch_compile")), each made
    at most once per session. `load` builds a fresh model every call: a detection model changes
    its own state on its first run (MultiScaleRoIAlign keeps its scales), and a test comparing
    against the real torch.compile path needs one that never ran, as the capture's was."""

    def __init__(self) -> None:
        self._captures: dict[str, Any] = {}

    @staticmethod
    def load(name: str) -> tuple[torch.nn.Module, tuple]:
        import torchvision

        torch.manual_seed(0)
        model = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None).eval()
        return model, ([torch.rand(3, 160, 160)],)

    def capture(self, name: str) -> Any:
        if name not in self._captures:
            import hierviz as hv

            self._captures[name] = hv.capture(*self.load(name), ir="torch_compile")
        return self._captures[name]


@pytest.fixture(scope="session")
def detection() -> DetectionModels:
    return DetectionModels()


@pytest.fixture(scope="session")
def ssdlite(detection: DetectionModels) -> tuple:
    """torchvision's ssdlite320_mobilenet_v3_large (random weights, eval), its input, and its
    graph-by-graph capture (hv.capture(..., ir="torch_compile"): 7 graphs, 6 breaks), the one
    `detection` makes once per session: the capture takes minutes on a CPU. Slow tests only."""
    name = "ssdlite320_mobilenet_v3_large"
    return (*detection.load(name), detection.capture(name))


@pytest.fixture(scope="session")
def run_python() -> Callable[..., subprocess.CompletedProcess]:
    """Run Python source in a fresh interpreter (this venv, repo root as cwd); returns the
    completed process with text stdout/stderr. `path_first` directories go first on sys.path."""

    def run(code: str, *, path_first: list[str | Path] = (), timeout: float = 180,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        full_env = dict(os.environ)
        full_env.update(env or {})
        pythonpath = [str(p) for p in path_first] + [str(ROOT)]
        if full_env.get("PYTHONPATH"):
            pythonpath.append(full_env["PYTHONPATH"])
        full_env["PYTHONPATH"] = os.pathsep.join(pythonpath)
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                              env=full_env, capture_output=True, text=True, timeout=timeout)

    return run


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--regen-golden", action="store_true", default=False,
                     help="rewrite the golden DOT files under tests/golden/ instead of comparing")


# Python 3.11 can leave a traceback entry without a line number (tb_lineno None, from code
# torch generates), and pytest's report of that failure then crashes the whole run with an
# INTERNALERROR instead of naming the test (seen in CI). Before pytest reports a failure, each
# such entry gets its frame's line, so the failing test is reported like any other.
def _with_line_numbers(tb: types.TracebackType | None) -> types.TracebackType | None:
    """`tb` itself when every entry has its line, else a copy whose entries without one take their
    frame's (walked in a loop: a traceback can be deeper than Python's recursion limit)."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    if all(entry.tb_lineno is not None for entry in entries):
        return entries[0] if entries else None
    rebuilt = None
    for entry in reversed(entries):
        frame = entry.tb_frame
        line = entry.tb_lineno if entry.tb_lineno is not None else (frame.f_lineno or frame.f_code.co_firstlineno)
        rebuilt = types.TracebackType(rebuilt, frame, entry.tb_lasti, line)
    return rebuilt


def _repair_line_numbers(exc: BaseException | None, seen: set[int]) -> bool:
    """Give every traceback of `exc` and its causes and contexts its line numbers; whether any changed."""
    changed = False
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        repaired = _with_line_numbers(exc.__traceback__)
        if repaired is not exc.__traceback__:
            exc.__traceback__, changed = repaired, True
        changed = _repair_line_numbers(exc.__cause__, seen) or changed
        exc = exc.__context__
    return changed


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> None:
    if call.excinfo is not None and _repair_line_numbers(call.excinfo.value, set()):
        call.excinfo = pytest.ExceptionInfo.from_exception(call.excinfo.value)


# The suite ends through Python's own exit. An abort there ("terminate called without an active
# exception", exit 134, after every test passed) was seen before 2026-12-06 and was worked around
# with os._exit. The cause found since: a daemon thread of hierviz still inside torch's C++ code while Python
# finalizes. BackgroundJob's runs were waited for at exit since baf51cd, but the Explorer's
# debounce timer was not: an apply on it at exit aborted 4 runs in 4 (tests/widget/test_exit_wait.py).
# hierviz/widget/exit_wait.py now settles both. Should an abort come back, PYTHONFAULTHANDLER=1
# (set by .ci/run) prints every thread's stack.
