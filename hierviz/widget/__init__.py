"""The `hv.explore` widget, in three parts joined by explorer.py: controls.py (the ipywidgets,
the support picker support_picker.py and the small controls refusing_controls.py, which refuse
what they cannot take, refusing.py),
controller.py (control state -> Config -> Partition, history and caches; no ipywidgets) and
panels.py (pure functions from a Partition to panel HTML), with numerics_tab.py (the Numerics
tab) and debounce.py. ipywidgets loads on first use; tuning loads when "find fastest" is pressed.
"""

from __future__ import annotations

import importlib
from typing import Any


_LAZY = {"Explorer": "hierviz.widget.explorer", "explore": "hierviz.widget.entry",
         "GraphsExplorer": "hierviz.widget.graphs_explorer"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hierviz.widget' has no attribute {name!r}")


__all__ = ["explore", "Explorer", "GraphsExplorer"]
