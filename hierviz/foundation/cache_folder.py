"""Where hierviz keeps its caches on disk (the capture cache and the build cache, each a folder
inside it) and whether it does: `$HIERVIZ_CACHE_DIR`, else `$XDG_CACHE_HOME/hierviz`, else
`~/.cache/hierviz`; `HIERVIZ_CACHE=0` turns the caches off, and so does a folder that is a file
(said once: `folder_problem`)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from hierviz.errors import user_stacklevel
from hierviz.foundation.cache_warning import CacheWarning

ENV_DIR, ENV_SWITCH = "HIERVIZ_CACHE_DIR", "HIERVIZ_CACHE"
_OFF = {"0", "false", "no", "off"}
_SAID: set[str] = set()  # cache folders said in this process to be files


def folder() -> Path:
    """Where the caches are kept: $HIERVIZ_CACHE_DIR, else the user's cache folder + /hierviz."""
    explicit = os.environ.get(ENV_DIR)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hierviz"


def folder_problem() -> str | None:
    """Why the cache folder cannot be one (it, or a folder above it, is a file), in one
    sentence saying what to do; None when it can."""
    where = folder()
    at = where
    try:
        while not at.exists() and at.parent != at:
            at = at.parent
        if at.is_dir():
            return None
    except OSError:  # a folder above it that cannot be searched: writing there fails quietly, as for a read-only one
        return None
    named = f"{ENV_DIR}={str(where)!r}" if os.environ.get(ENV_DIR) else f"the cache folder {where}"
    what = "is a file" if at == where else f"is inside {at}, which is a file"
    return (f"hierviz's cache is off: {named} {what}, not a folder; set {ENV_DIR} to a folder (or unset it for "
            "the default ~/.cache/hierviz)")


def enabled(cache: bool = True) -> bool:
    """Whether captures and builds are cached: `cache`, not HIERVIZ_CACHE=0, and a cache folder
    that can be one (else one CacheWarning says why: `folder_problem`)."""
    if not cache or os.environ.get(ENV_SWITCH, "1").strip().lower() in _OFF:
        return False
    problem = folder_problem()
    if problem is None:
        return True
    if problem not in _SAID:
        _SAID.add(problem)
        warnings.warn(problem, CacheWarning, stacklevel=user_stacklevel())
    return False


__all__ = ["ENV_DIR", "ENV_SWITCH", "enabled", "folder", "folder_problem"]
