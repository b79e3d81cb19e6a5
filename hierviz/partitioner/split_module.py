"""The split module's class, `SplitModule`: the parent GraphModule of `Partition.module`,
whose submodules are final when it is made (splitter.py builds it)."""

from __future__ import annotations

from torch.fx import GraphModule


class SplitModule(GraphModule):
    """A GraphModule whose submodules are final when it is made: `recompile()` regenerates
    this module's code, not theirs (recompile a submodule itself after changing its graph)."""

    def _recompile_submodules(self) -> list:
        return []


__all__ = ["SplitModule"]
