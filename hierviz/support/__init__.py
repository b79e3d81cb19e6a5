"""Which backend takes which node: the support sources (made by sources.py, `hv.support`; a
source's verdict in verdict.py, the `Support` base in support_base.py, op sets in op_sets.py,
Torch-TensorRT's converter registry in tensorrt_support.py, TorchInductor in inductor_support.py,
predicates and compositions in composed.py), the verdicts stored for the converter registry
(stored_verdicts.py), their keys (support_key.py), the per-backend support map (support_map.py)
and the op set TorchInductor compiles (inductor_ops.py).

`hv.support` is the sources module itself; its public names are also here."""

from hierviz.support.composed import any_chain, chain
from hierviz.support.sources import (
    from_dict,
    inductor,
    none,
    ops,
    tensorrt,
    where,
)
from hierviz.support.support_base import Support
from hierviz.support.verdict import Verdict

__all__ = ["Support", "Verdict", "any_chain", "chain", "from_dict", "inductor", "none", "ops", "tensorrt", "where"]
