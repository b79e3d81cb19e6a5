"""Config.support's value: a read-only, hashable mapping backend name -> hv.Support, so that a
Config holding one stays hashable (partition caches key on it)."""

from __future__ import annotations

from typing import Iterator, Mapping

from hierviz.support.support_base import Support


class SupportMap(Mapping[str, Support]):
    """A read-only, hashable mapping backend -> Support."""

    def __init__(self, items: Mapping[str, Support]) -> None:
        self._items = dict(sorted(items.items()))

    def __getitem__(self, key: str) -> Support:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return repr(self._items)
