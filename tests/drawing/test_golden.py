"""Golden DOT files: the tiny conv net and a one-block transformer under three configs each.

A diff here means the diagrams changed. If the change is intended, regenerate with
`pytest tests/drawing --regen-golden` and review the diff of tests/golden/ like code.
"""

from __future__ import annotations

import pytest

from .conftest import conv_configs, transformer_configs
from .helpers import check_golden

CASES = ([("conv", name, view) for name in conv_configs() for view in ("full", "collapsed")]
         + [("transformer", name, view) for name in transformer_configs() for view in ("full", "collapsed")])


@pytest.mark.parametrize("model,config,view", CASES, ids=["-".join(c) for c in CASES])
def test_dot_matches_golden(model, config, view, conv_parts, transformer_parts, regen_golden):
    part = (conv_parts if model == "conv" else transformer_parts)[config]
    check_golden(part.render(view).source, f"render_{model}_{config}_{view}.dot", regen_golden)


def test_goldens_cover_every_fallback_style(transformer_parts):
    """The 'fallback' golden draws each fallback reason, the custom backend and the legend."""
    src = transformer_parts["fallback"].render("full").source
    for cls in ("hv-torch_executed_ops", "hv-unsupported", "hv-validator_rejected", "hv-demoted",
                "hv-my_backend"):
        assert cls in src, cls


def test_same_dot_twice(transformer_parts):
    part = transformer_parts["split"]
    assert part.render("full").source == part.render("full").source
    assert part.render("collapsed").source == part.render("collapsed").source
