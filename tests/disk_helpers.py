"""Fixtures and helpers of the tests of hierviz's caches on disk (a pytest plugin of
tests/conftest.py): processes that write temp files (one killed, one still running) and the temp
file such a writer left (hierviz.foundation.temp_files names it for its writer)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from hierviz.foundation import temp_files

OLD = temp_files.STALE_S + 60  # untouched longer than a writer leaves its file


@pytest.fixture
def writers() -> Iterator[tuple[int, int]]:
    """(the pid of a writer that was killed, the pid of one still writing)."""
    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    killed.kill()
    killed.wait()
    writing = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield killed.pid, writing.pid
    writing.kill()
    writing.wait()


def left_temp(folder: Path, name: str, age_s: float = OLD, data: bytes = b"half an entry") -> Path:
    """A temp file `name` in `folder` (made if need be) holding `data`, untouched for `age_s`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    when = time.time() - age_s
    os.utime(path, (when, when))
    return path


__all__ = ["OLD", "left_temp", "writers"]
