"""DamagedEntry: what reading a disk store's entry raises when its files disagree with its record."""

from __future__ import annotations


class DamagedEntry(Exception):
    """An entry whose record is not readable, or whose files are gone or differ (length, SHA-256)
    from what the record says; `why` says which, in words a warning can carry."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


__all__ = ["DamagedEntry"]
