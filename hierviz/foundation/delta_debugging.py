"""Delta debugging (Zeller's ddmin), the one reduction both searches use: the smallest failing
part of an engine (nodes that still fail) and the smallest fix (ops that still make every
engine build)."""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

T = TypeVar("T")


def ddmin(items: Sequence[T], holds: Callable[[list[T]], bool], budget: Callable[[], bool] = lambda: True) -> list[T]:
    """A part of `items` for which `holds` is still true, from which no single item can be
    dropped: `items` (for which it holds) is cut into chunks, a chunk that holds alone replaces
    it, else a complement that holds, else the chunks are halved; until single items. Stops
    early, with what it has, when `budget()` turns False."""
    current, n = list(items), 2
    while len(current) >= 2 and budget():
        chunks = [current[i * len(current) // n:(i + 1) * len(current) // n] for i in range(n)]
        for chunk in chunks:
            if chunk and budget() and holds(chunk):
                current, n = chunk, 2
                break
        else:
            for chunk in chunks:
                rest = [x for x in current if x not in chunk]
                if chunk and rest and budget() and holds(rest):
                    current, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(current):
                    break
                n = min(len(current), 2 * n)
    return current


__all__ = ["ddmin"]
