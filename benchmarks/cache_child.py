"""One measurement in a new Python process with its own HIERVIZ_CACHE_DIR (never the user's own
cache), for the benchmarks that time a cold or a cached re-open (capture_cache.py, reopen.py):
the child prints one JSON line last, which is what it measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def run_child(code: str, cache_dir: str, what: str = "the child process") -> dict:
    """Run `code` in a new interpreter with HIERVIZ_CACHE_DIR=cache_dir (HIERVIZ_CACHE unset:
    the cache on) and return its last stdout line as JSON; exit naming `what` if it fails."""
    env = dict(os.environ, HIERVIZ_CACHE_DIR=cache_dir)
    env.pop("HIERVIZ_CACHE", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode:
        raise SystemExit(f"{what} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
