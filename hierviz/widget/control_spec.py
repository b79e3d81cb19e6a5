"""Each setting's Explorer control, declared as data: which widget shows it (`kind`), its label,
options, tooltip and the line it sits on. controls.py builds the widgets from `CONTROLS`,
one entry per Config field (tests/settings/test_settings.py checks that none is missing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from hierviz import trt
from hierviz.settings.engine_table import ENGINE_TABLE
from hierviz.settings.setting_values import DEMOTE_TO


@dataclass(frozen=True)
class Control:
    """A setting's control: `kind` names the widget controls.py builds (backends, support,
    slider, ops, toggle, choice); `options` are a choice's values (or a function giving them);
    `row` is the line of the controls it sits on."""

    kind: str
    description: str = ""
    options: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()
    tooltip: str = ""
    icon: str = ""
    row: int = 0
    unavailable: str = ""  # why a value may not be offered here (a choice whose options depend on the machine)


def available_engines() -> tuple[str, ...]:
    """The engines that can run here: those that need Torch-TensorRT only when it is there
    (trt.present: asked without importing it)."""
    return tuple(e.name for e in ENGINE_TABLE if not e.needs_trt or trt.present())


CONTROLS: dict[str, Control] = {
    "engine": Control("choice", "engine", options=available_engines,
                      tooltip="hierviz: hierviz's partitioner; fast: what torch_tensorrt.compile runs; "
                              "global: compile with use_fast_partitioner=False; torch_tensorrt: upstream's "
                              "hierarchical one", row=0,
                      unavailable="the engines other than hierviz need torch_tensorrt, which is not available here"),
    "priority": Control("backends", tooltip="Backends, highest priority first: drag to reorder, "
                        "remove one to switch it off, type a name to add it back.", row=1),
    "support": Control("support", row=2),
    "min_block_size": Control("slider", "min_block_size", row=3),
    "require_full_compilation": Control("toggle", "require full compilation", icon="lock", row=3),
    "skip_fusion": Control("toggle", "skip fusion", row=3),
    "demote_to": Control("choice", "demote to", options=DEMOTE_TO, row=3),
    "torch_executed_ops": Control("ops", row=4),
}
