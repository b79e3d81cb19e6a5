"""Asking the converter registry `node in registry` for every node of one run, fast.

torch_tensorrt.compile asks `node in DYNAMO_CONVERTERS` per node: the registry checks its
invariants, builds debug-log strings, runs the converter's capability validator and checks
the node for dynamic shapes, every time. Within one run (one registry state, one
CompilationSettings, one graph) part of that answer cannot change, so `Validator` keeps it:

- a target whose first converter has no capability validator (184 of the 241 targets in
  Torch-TensorRT 2.14) and supports dynamic shapes (or the settings assume it, or the graph is
  static) is accepted for every node: the verdict is kept per target;
- whether a converter supports dynamic shapes is read once per converter;
- on a graph where no node has a symbolic shape, the per-node dynamic-shape check always
  says "static", so it is skipped.

Every converter that does have a capability validator is still asked on every node: those
verdicts depend on the node's users (batch norm, max.dim, clone), its producer's verdict
(getitem) and the settings (immutable_weights, assume_dynamic_shape_support). The order in
which converters are tried is the registry's (`ConverterRegistry.__getitem__`): the first
converter whose validator accepts the node, and that takes dynamic shapes when the node has
them, wins. tests/trt/test_validation.py checks that the answers equal `node in registry`.
"""

from __future__ import annotations

from typing import Any

import torch

# (capability validator or None when the converter has none, supports dynamic shapes), per
# converter of a target in the registry's order; a plain callable (an FX converter) is
# (None, False), as the registry treats it.
Plan = tuple[tuple[Any, bool], ...]


class Validator:
    """`accepts(node)`: what `node in registry` answers, with the registry's compilation
    settings and disallowed targets as they are when the Validator is made (one run)."""

    def __init__(self, registry: Any) -> None:
        from torch_tensorrt.dynamo.conversion._ConverterRegistry import ConverterSupport, node_has_dynamic_shapes

        self.registry = registry
        self._no_validator = ConverterSupport.__dataclass_fields__["capability_validator"].default
        self._node_has_dynamic_shapes = node_has_dynamic_shapes
        self._settings = registry.compilation_settings
        self._assume_dynamic = bool(getattr(self._settings, "assume_dynamic_shape_support", False))
        self._disallowed = registry.disallowed_targets
        # id(target) -> (target, its plan, or its verdict when it is the same for every node)
        self._plans: dict[int, tuple[Any, Plan | bool]] = {}
        self._static: dict[torch.fx.Graph, bool] = {}

    def accepts(self, node: torch.fx.Node) -> bool:
        """Whether a converter takes `node`. A validator's exception other than KeyError
        propagates, as it does from `node in registry`."""
        plan = self._plan_of(node.target)
        if plan is True or plan is False:
            return plan
        try:
            return self._run(plan, node)
        except KeyError:  # `in` answers False on a KeyError, wherever it was raised
            return False

    def constant(self, node: torch.fx.Node) -> bool:
        """Whether `accepts` answers the same for every node of this node's graph with its
        target: no converter, or a first converter without a capability validator that takes
        the node's shapes (callers may then keep the verdict per target)."""
        plan = self._plan_of(node.target)
        if plan is True or plan is False:
            return True
        return plan[0][0] is None and (self._assume_dynamic or self.static(node.graph))

    def _plan_of(self, target: Any) -> Plan | bool:
        known = self._plans.get(id(target))  # by identity: an op's hash is computed in Python
        if known is None or known[0] is not target:
            known = self._plans[id(target)] = (target, self._plan(target))
        return known[1]

    def _plan(self, target: Any) -> Plan | bool:
        try:
            hash(target)
        except TypeError:  # an unhashable target: no converter is registered for it
            return False
        if self._disallowed and (target in self._disallowed
                                 or self.registry.qualified_name_or_str(target) in self._disallowed):
            return False
        plan: list[tuple[Any, bool]] = []
        for registry in self.registry.registries:
            converters = registry.get(target)
            if converters is None:
                continue
            if isinstance(converters, (list, tuple)):
                plan.extend((None if c.capability_validator is self._no_validator else c.capability_validator,
                             bool(c.supports_dynamic_shapes)) for c in converters)
            else:
                plan.append((None, False))
        if not plan:
            return False
        validator, dynamic = plan[0]
        if validator is None and (dynamic or self._assume_dynamic):
            return True  # the first converter takes every node
        return tuple(plan)

    def _run(self, plan: Plan, node: torch.fx.Node) -> bool:
        for validator, dynamic in plan:
            if validator is not None and not validator(node, self._settings):
                continue
            if dynamic or self._assume_dynamic or self.static(node.graph) or not self._node_has_dynamic_shapes(node):
                return True
        return False

    def static(self, graph: torch.fx.Graph) -> bool:
        """Whether no node of `graph` has a symbolic shape or value (then no node has dynamic
        shapes in the registry's sense). A value of a kind the registry's check does not
        expect counts as not static, so that those nodes get the registry's own check."""
        known = self._static.get(graph)
        if known is None:
            known = self._static[graph] = all(_static_value(n.meta["val"]) for n in graph.nodes if "val" in n.meta)
        return known


def _static_value(value: Any) -> bool:
    if isinstance(value, torch.Tensor):  # symbolic sizes or strides are what the registry looks for
        return not value._has_symbolic_sizes_strides
    if type(value) in (int, float, bool):
        return True
    if isinstance(value, (list, tuple)):
        return all(v is None or type(v) in (int, float, bool)
                   or (isinstance(v, torch.Tensor) and not v._has_symbolic_sizes_strides) for v in value)
    return False
