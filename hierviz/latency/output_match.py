"""Comparing the split model's outputs with eager's: dtype-aware tolerances, NaN/inf-aware errors,
and the per-tensor figures hv.numerics reports (relative error with a floor, cosine, error / tolerance)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

# Tolerances by the reference's dtype: an output matches when
#   max |out - ref| <= atol + rtol * max |ref|
# (scaled by the tensor's magnitude, so TF32 / reduced-precision kernels that are accurate
# relative to the values are not flagged elementwise near zero). Integers and bools: exact.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-9),
    torch.float32: (5e-3, 1e-5),
    torch.float16: (2e-2, 1e-3),
    torch.bfloat16: (4e-2, 1e-3),
}
_DEFAULT_TOL = (5e-3, 1e-5)


def compare(outputs: Any, reference: Any, rtol: float | None = None, atol: float | None = None
            ) -> tuple[bool, float, float, list[str]]:
    """(match, max_abs_error, max_rel_error, problems) of `outputs` against `reference`."""
    got, want = tree_leaves(outputs), tree_leaves(reference)
    problems: list[str] = []
    if len(got) != len(want):
        return False, math.inf, math.inf, [f"{len(got)} outputs, eager gives {len(want)}"]
    ok, max_abs, max_rel = True, 0.0, 0.0
    for i, (a, b) in enumerate(zip(got, want)):
        if not isinstance(b, torch.Tensor):
            if a != b:
                ok = False
                problems.append(f"output {i}: {a!r} != {b!r}")
            continue
        if not isinstance(a, torch.Tensor) or tuple(a.shape) != tuple(b.shape):
            ok, max_abs, max_rel = False, math.inf, math.inf
            problems.append(f"output {i}: shape {tuple(getattr(a, 'shape', ()))} != {tuple(b.shape)}")
            continue
        if b.numel() == 0:
            continue
        err, scale = _max_error(a.detach(), b.detach())
        rel = err / scale if scale > 0 else (0.0 if err == 0 else math.inf)
        max_abs, max_rel = max(max_abs, err), max(max_rel, rel)
        if b.is_floating_point() or b.is_complex():
            r, t = TOLERANCES.get(b.dtype, _DEFAULT_TOL)
            r = r if rtol is None else rtol
            t = t if atol is None else atol
            if not err <= t + r * scale:
                ok = False
                problems.append(f"output {i}: max abs error {err:.3g} > {t:.1g} + {r:.1g} x max|eager| {scale:.3g}")
        elif err != 0:
            ok = False
            problems.append(f"output {i} ({b.dtype}): values differ (max abs error {err:.3g})")
        if a.dtype != b.dtype:
            problems.append(f"output {i}: dtype {a.dtype}, eager gives {b.dtype}")
    return ok, max_abs, max_rel, problems


def _max_error(a: torch.Tensor, b: torch.Tensor) -> tuple[float, float]:
    """max |a - b| and max |b| over finite values, computed where the tensors live.
    NaNs in the same places, and equal infinities, count as equal."""
    if a.device != b.device:
        a = a.to(b.device)
    if b.is_complex():
        a, b = torch.view_as_real(a.to(b.dtype)), torch.view_as_real(b)
    if b.is_floating_point():
        work = torch.float64 if b.dtype == torch.float64 else torch.float32
    else:
        work = torch.float64
    a, b = a.to(work), b.to(work)
    diff = (a - b).abs()
    err = float(diff.max())
    finite_ref = bool(torch.isfinite(b).all())
    scale = float(b.abs().max()) if finite_ref else 0.0
    if not math.isfinite(err) or not finite_ref:  # rare: look at NaNs and infinities one by one
        same = (torch.isnan(a) & torch.isnan(b)) | (torch.isinf(a) & torch.isinf(b) & (a == b))
        diff = torch.where(same, torch.zeros_like(diff), diff)
        diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
        err = float(diff.max())
        finite = b[torch.isfinite(b)]
        scale = float(finite.abs().max()) if finite.numel() else 0.0
    return err, scale


def leaf_errors(a: torch.Tensor, b: torch.Tensor, floor: float) -> tuple[float, float, float, float]:
    """(max |a - b| / max(|b|, floor x max|b|), cosine similarity, max |a - b|, max |b|) over the
    elements finite in both (non-finite mismatches are compare's to report)."""
    work = torch.float64 if b.dtype == torch.float64 else torch.float32
    if b.is_complex():
        a, b = torch.view_as_real(a.to(b.dtype)), torch.view_as_real(b)
    a, b = a.detach().to(device=b.device, dtype=work).flatten(), b.detach().to(work).flatten()
    finite = torch.isfinite(a) & torch.isfinite(b)
    if not bool(finite.all()):
        a, b = a[finite], b[finite]
    if a.numel() == 0:
        return 0.0, 1.0, 0.0, 0.0
    mag = b.abs()
    scale = float(mag.max())
    diff = (a - b).abs()
    denom = torch.clamp(mag, min=max(floor * scale, torch.finfo(work).tiny))
    rel = float((diff / denom).max())
    na, nb = float(torch.linalg.vector_norm(a)), float(torch.linalg.vector_norm(b))
    if na == 0.0 or nb == 0.0:
        cos = 1.0 if na == nb else 0.0
    else:
        cos = float(torch.dot(a, b)) / (na * nb)
    return rel, min(1.0, cos), float(diff.max()), scale


def tolerance_ratio(err: float, scale: float, dtype: torch.dtype, rtol: float | None, atol: float | None) -> float:
    """`err` as a fraction of the tolerance for `dtype` (atol + rtol x max|ref|), as compare judges."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return 0.0 if err == 0 else math.inf
    r, t = TOLERANCES.get(dtype, TOLERANCES[torch.float32])
    bound = (t if atol is None else atol) + (r if rtol is None else rtol) * scale
    if err == 0:
        return 0.0
    return err / bound if bound > 0 else math.inf


def tolerance_text(leaves: list[torch.Tensor], rtol: float | None, atol: float | None) -> str:
    parts = []
    for dtype in dict.fromkeys(x.dtype for x in leaves):
        if not (dtype.is_floating_point or dtype.is_complex):
            parts.append(f"{str(dtype).replace('torch.', '')}: exact")
            continue
        r, t = TOLERANCES.get(dtype, TOLERANCES[torch.float32])
        r, t = (r if rtol is None else rtol), (t if atol is None else atol)
        parts.append(f"{str(dtype).replace('torch.', '')}: {t:.0e} + {r:.0e} x max|ref|")
    return "; ".join(parts)


__all__ = ["compare", "TOLERANCES", "leaf_errors", "tolerance_ratio", "tolerance_text"]
