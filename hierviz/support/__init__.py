"""Which backend takes which node: the support sources (sources.py, `hv.support`), the verdicts
stored for the converter registry (stored_verdicts.py), their keys (support_key.py), the
per-backend support map (support_map.py) and the op set TorchInductor compiles (inductor_ops.py).

`hv.support` is the sources module itself; its public names are also here."""

from hierviz.support.sources import (
    Support,
    Verdict,
    any_chain,
    chain,
    from_dict,
    inductor,
    none,
    ops,
    tensorrt,
    where,
)

__all__ = ["Support", "Verdict", "any_chain", "chain", "from_dict", "inductor", "none", "ops", "tensorrt", "where"]
