"""The size bound of the capture cache and of the build cache (each): `$HIERVIZ_CACHE_LIMIT` when
set, else a quarter of the free space on the cache folder's disk, at least 2 GiB (or the whole
free space, when the disk has less) and at most 20 GiB, so that a billion-parameter engine
(2.2 GB in bf16) is kept with room for others wherever the disk has 10 GB free, and a small
disk never gets a bound larger than what it can hold.

`HIERVIZ_CACHE_LIMIT` takes bytes (`2000000000`) or a number with a unit: `kB`, `MB`, `GB`, `TB`
(and `k`, `M`, `G`, `T`) are powers of 1000, `KiB`, `MiB`, `GiB`, `TiB` powers of 1024, in any
case, with or without a space (`10GB`, `1.5 GiB`, `500m`). A value that does not read as a size
is said once (a CacheWarning naming it and what it takes) and the disk's rule is used.
"""

from __future__ import annotations

import re
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

from hierviz.foundation.cache_warning import CacheWarning
from hierviz.errors import user_stacklevel

ENV_LIMIT = "HIERVIZ_CACHE_LIMIT"
GiB = 1024**3
DEFAULT_LIMIT = 2 * GiB  # the least the cache may hold, where the disk has that much free
MAX_LIMIT = 20 * GiB
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
          "t": 1000**4, "tb": 1000**4, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}
_SIZE = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)$")
_SAID: set[str] = set()  # the unreadable values said already in this process


def parse_size(text: str) -> int | None:
    """The bytes `text` says (see the module docstring), or None when it says no size."""
    m = _SIZE.match(text.strip().lower())
    if m is None or m.group(2) not in _UNITS:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2)])


@dataclass(frozen=True)
class CacheLimit:
    """The bound (`bytes`), whether `HIERVIZ_CACHE_LIMIT` set it (`from_env`), and the free space
    of the disk it was taken from otherwise (`free`, None when the disk could not be asked)."""

    bytes: int
    from_env: bool = False
    free: int | None = None

    def why(self) -> str:
        """How the bound was chosen, in words (`hierviz cache info`)."""
        if self.from_env:
            return f"set by {ENV_LIMIT}"
        rule = (f"a quarter of the free space on its disk, at least 2 GiB (or all of it, when less is free) and at "
                f"most 20 GiB; {ENV_LIMIT}=<size> sets it (10GB, 10GiB or bytes)")
        if self.free is None:
            return f"its disk's free space could not be read, so 2 GiB; {ENV_LIMIT}=<size> sets it"
        free = f"{self.free / GiB:.1f} GiB" if self.free >= GiB // 10 else f"{self.free / 2**20:.1f} MiB"
        return f"{rule}; {free} free now"

    @property
    def small_disk(self) -> bool:
        """The bound is the disk's whole free space, under 2 GiB: the disk, not the bound, is short."""
        return not self.from_env and self.free is not None and self.bytes < DEFAULT_LIMIT


def cache_limit(folder: Path) -> CacheLimit:
    """The bound for a cache in `folder` (read when a store opens: it follows the disk)."""
    explicit = _from_env()
    if explicit is not None:
        return CacheLimit(explicit, from_env=True)
    where = folder
    try:
        while not where.exists() and where.parent != where:  # the folder may not be made yet
            where = where.parent
        free = shutil.disk_usage(where).free
    except OSError:
        return CacheLimit(DEFAULT_LIMIT)
    return CacheLimit(max(min(DEFAULT_LIMIT, free), min(free // 4, MAX_LIMIT)), free=free)


def _from_env() -> int | None:
    import os

    text = os.environ.get(ENV_LIMIT, "").strip()
    if not text:
        return None
    size = parse_size(text)
    if size is None and text not in _SAID:
        _SAID.add(text)
        warnings.warn(f"{ENV_LIMIT}={text!r} is not a size, so it is not used: give bytes (2000000000) or a number "
                      f"with a unit (10GB, 1.5GiB, 500MB); the cache limit follows the disk's free space meanwhile",
                      CacheWarning, stacklevel=user_stacklevel())
    return size


__all__ = ["CacheLimit", "cache_limit", "parse_size", "ENV_LIMIT", "DEFAULT_LIMIT", "MAX_LIMIT"]
