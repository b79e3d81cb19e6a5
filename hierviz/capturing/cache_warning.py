"""CacheWarning: what the capture cache says when an entry or its settings cannot be used."""

from __future__ import annotations


class CacheWarning(UserWarning):
    """A capture-cache entry could not be used (it is captured again)."""


__all__ = ["CacheWarning"]
