"""Warnings recorded for one thread, while the warnings of other threads still reach the user.

`warnings.catch_warnings(record=True)` records every warning the process shows, whichever
thread raised it: a warning of the graph run on a thread of its own while Torch-TensorRT
converts (hierviz.building.build_partition) would be said as Torch-TensorRT's, and never shown.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any


class ThreadWarnings:
    """`with ThreadWarnings() as heard:` puts every warning the entering thread raises in the
    list `heard` (as `warnings.catch_warnings(record=True)` does, with the "always" filter, none
    printed), and holds back the warnings of other threads, which it issues again when it ends
    (under the filters then in force). The filters and `warnings.showwarning` are put back."""

    def __init__(self) -> None:
        self.heard: list[warnings.WarningMessage] = []
        self._others: list[warnings.WarningMessage] = []
        self._owner = threading.get_ident()
        self._catching = warnings.catch_warnings()

    def __enter__(self) -> list[warnings.WarningMessage]:
        self._owner = threading.get_ident()
        self._catching.__enter__()
        warnings.simplefilter("always")
        warnings.showwarning = self._show
        return self.heard

    def _show(self, message: Warning | str, category: type[Warning], filename: str, lineno: int,
              file: Any = None, line: str | None = None) -> None:
        said = warnings.WarningMessage(message, category, filename, lineno, file, line)
        (self.heard if threading.get_ident() == self._owner else self._others).append(said)

    def __exit__(self, *exc: Any) -> None:
        self._catching.__exit__(*exc)
        others, self._others = self._others, []
        for said in others:
            warnings.warn_explicit(said.message, said.category, said.filename, said.lineno)


__all__ = ["ThreadWarnings"]
