"""Torch-TensorRT's converter registry and the lock that guards it. The registry holds the
compilation settings a conversion runs under and the lookup hierviz patches while validating, so
validation (`partitioners.validating`), torch_tensorrt.compile's partitioning (`partitioners`) and
the engine builder's conversions (`engine_builder`, `subgraph_engines`) each take REGISTRY_LOCK:
none of them sees another's settings or patched lookup."""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from hierviz.trt.loading import require

REGISTRY_LOCK = threading.RLock()  # the converter registry's settings and its patched lookup: one thread at a time


def converter_registry() -> Any:
    """Torch-TensorRT's DYNAMO_CONVERTERS registry."""
    require()
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS

    return DYNAMO_CONVERTERS


@contextlib.contextmanager
def registry_held() -> Iterator[Any]:
    """The converter registry, for one thread at a time (REGISTRY_LOCK, re-entrant): a conversion
    inside sets the registry's compilation settings as upstream's interpreter does, and they are
    put back after, so a validation and a conversion never see each other's settings or patched
    lookup."""
    registry = converter_registry()
    with REGISTRY_LOCK:
        saved = registry.compilation_settings, registry.disallowed_targets
        try:
            yield registry
        finally:
            registry.compilation_settings, registry.disallowed_targets = saved


__all__ = ["REGISTRY_LOCK", "converter_registry", "registry_held"]
