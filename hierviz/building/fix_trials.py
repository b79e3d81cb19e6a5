"""The builds a fix search spends (engine_fix): a candidate partition built with the settings
the build had plus the candidate's, and the smallest failing part of an engine that failed.

One SubgraphBuilder per set of settings (the build's own for none), so an engine built once is
not built again, and the smallest part's trials land where `Builds.repro()` looks for them (a
second search builds nothing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from hierviz.building.reduction import smallest_failing
from hierviz.building.subgraph_builds import SubgraphBuilder, tensorrt_tags

if TYPE_CHECKING:  # pragma: no cover
    from hierviz import trt
    from hierviz.partitioner.partition_result import Partition

EngineFailure = tuple[str, "trt.EngineBuild"]  # (the failed subgraph's tag, what building it gave)


class FixTrials:
    """Builds candidates of a fix with `base` (the build's SubgraphBuilder) and its settings;
    `made`, `cached`: the builder's calls and the build-cache reads they spent, `reductions`
    the smallest-part searches."""

    def __init__(self, base: SubgraphBuilder) -> None:
        self.base = base
        self._builders: dict[tuple, SubgraphBuilder] = {(): base}
        self.reductions = 0

    @property
    def settings(self) -> dict[str, Any]:
        """The trt_settings the build was made with."""
        return dict(self.base.trt_settings or {})

    def builder(self, settings: Mapping[str, Any]) -> SubgraphBuilder:
        """The builder of the build's settings with `settings` added."""
        key = tuple(sorted(settings.items()))
        if key not in self._builders:
            self._builders[key] = SubgraphBuilder({**self.settings, **settings}, self.base.tf32,
                                                  cache=self.base.store is not None)
        return self._builders[key]

    @property
    def made(self) -> int:
        return sum(b.made for b in self._builders.values())

    @property
    def cached(self) -> int:
        return sum(b.from_store for b in self._builders.values())

    def first_failure(self, part: Partition, settings: Mapping[str, Any]) -> EngineFailure | None:
        """The first TensorRT subgraph of `part` that fails to convert or build with `settings`
        added (the later ones are not built), or None when every engine builds."""
        builder = self.builder(settings)
        for tag in tensorrt_tags(part):
            made, _ = builder.build(getattr(part.module, tag), label=tag)
            if made.stage != "built":
                return tag, made
        return None

    def smallest_part(self, part: Partition, tag: str, settings: Mapping[str, Any]) -> tuple[str, ...]:
        """The nodes of the smallest part of subgraph `tag` that fails as it does (reduction)."""
        builder = self.builder(settings)
        self.reductions += 1
        return smallest_failing(getattr(part.module, tag), lambda g: builder.build(g, label=tag)).nodes


__all__ = ["EngineFailure", "FixTrials"]
