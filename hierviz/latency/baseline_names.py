"""The words for the eager baseline, in one place: what hv.measure's verdict and notes, the
`verdict` column of hv.sweep and hv.tune tables, hv.tune's verdict, hv.numerics and the
explorer's lines call the model a split model is compared with.

It is "eager PyTorch"; where it is known what ran, the long form says which in brackets: the
user's nn.Module, or the captured graph run unsplit (a bare graph, with no nn.Module behind it).
"""

from __future__ import annotations

EAGER = "eager PyTorch"  # the baseline's one name; what was timed follows it in brackets
EAGER_MODULE = f"{EAGER} (your nn.Module)"      # the user's nn.Module run eagerly
GRAPH_EAGER = f"{EAGER} (the captured graph)"   # the captured graph run eagerly: no nn.Module there (a bare graph)
OUTPUTS_DIFFER = f"outputs differ from {EAGER}"  # outputs checked against the eager reference and not within tolerance
OUTPUTS_MATCH = f"outputs match {EAGER}"

__all__ = ["EAGER", "EAGER_MODULE", "GRAPH_EAGER", "OUTPUTS_DIFFER", "OUTPUTS_MATCH"]
