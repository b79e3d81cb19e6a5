"""The auto view's estimate of the full view's size (budget.full_size), against dot's layout:
close for ordinary nets and for graphs with many parallel short branches (Mamba's unrolled
selective scan), which longest-path ranking stacks on a few ranks and used to overestimate."""

from __future__ import annotations

import re

import pytest
import torch

import hierviz as hv
from hierviz.drawing import budget, layout, views


def _estimate_and_real(p) -> tuple[tuple[int, int], tuple[int, int]]:
    seen: list[tuple[int, int]] = []
    real_size = budget.full_size

    def spy(ctx, drawn):
        seen.append(real_size(ctx, drawn))
        return seen[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(views, "full_size", spy)
        p.render("auto")
    svg = layout(p.render("full"), "svg").decode()
    w, h = re.search(r'<svg width="(\d+)pt" height="(\d+)pt"', svg).groups()
    return seen[0], (round(int(w) * 96 / 72), round(int(h) * 96 / 72))


@pytest.mark.slow
def test_mamba_full_view_size_is_estimated_from_real_rank_widths(needs_dot) -> None:
    transformers = pytest.importorskip("transformers")
    config = transformers.MambaConfig(vocab_size=256, hidden_size=64, state_size=8, num_hidden_layers=2,
                                      intermediate_size=128, use_cache=False)
    torch.manual_seed(0)
    p = hv.partition(transformers.MambaModel(config).eval(), (torch.randint(0, 256, (1, 8)),))
    (ew, eh), (rw, rh) = _estimate_and_real(p)
    assert 0.7 * rw <= ew <= 1.3 * rw, (ew, rw)  # was 2.4x the real width
    assert 0.85 * rh <= eh <= 1.15 * rh, (eh, rh)


def test_zoo_net_estimate_stays_close(zoo_cache, needs_dot) -> None:
    p = hv.partition(zoo_cache.capture("resnet18"))
    (ew, eh), (rw, rh) = _estimate_and_real(p)
    assert 0.85 * rw <= ew <= 1.15 * rw and 0.85 * rh <= eh <= 1.15 * rh, ((ew, eh), (rw, rh))


class _Chain(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(700):
            x = torch.relu(x) + 1 if i % 2 else torch.sigmoid(x)
        return x


@pytest.mark.slow
def test_full_view_past_the_bitmap_limit_says_so(needs_dot) -> None:
    """graphviz scales a bitmap past 32,767 px down to fit: the title says so, and so does a
    warning when a .png reached the limit."""
    p = hv.partition(_Chain(), (torch.randn(4),))
    g = p.render("full")
    assert re.fullmatch(r"about [\d,]+\u00d7[\d,]+ px: past graphviz's 32,767 px limit for bitmaps, a \.png is "
                        r"scaled down to fit \(save \.svg for full size, or view='modules' / 'collapsed'\)",
                        g.info["notice"])
    assert "past graphviz&#39;s 32,767 px limit" in g.source or "past graphviz's 32,767 px limit" in g.source
    with pytest.warns(UserWarning, match=r"reached graphviz's 32,767 px limit for bitmaps \([\d,]+\u00d732,767 px\)"):
        layout(g, "png")
    assert "notice" not in hv.partition(torch.nn.ReLU(), (torch.randn(4),)).render("full").info


def test_auto_estimates_the_full_view_once() -> None:
    """auto's estimate of the full view's size is the one the full view's notice reads: the
    ranks are worked out once per render."""
    from hierviz.drawing import graph

    p = hv.partition(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), (torch.randn(2, 4),))
    calls: list[int] = []
    real_size = budget.full_size

    def counted(ctx, drawn):
        calls.append(len(drawn))
        return real_size(ctx, drawn)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(views, "full_size", counted)
        mp.setattr(graph, "full_size", counted)
        g = p.render("auto")
        assert g.info["view"] == "full" and len(calls) == 1
        p.render("full")
    assert len(calls) == 2  # view='full' on its own estimates it for the notice
