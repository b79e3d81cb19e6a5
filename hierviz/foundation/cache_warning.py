"""CacheWarning: what hierviz's caches say when an entry or their settings cannot be used."""

from __future__ import annotations


class CacheWarning(UserWarning):
    """A cache entry could not be used (it is made again), or a cache setting was not understood."""


__all__ = ["CacheWarning"]
