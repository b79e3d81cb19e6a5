"""GpuTarget: the CUDA GPU hierviz lowers a model for when `target_device="cuda"`, whatever machine it runs on.

Some of torch's lowering choices are made from the GPU the trace runs on: which attention
kernel `scaled_dot_product_attention` calls (torch's `sdp_utils.cpp`: the GPU's compute
capability, the cuDNN version, torch's SDPA switches and priority order). Without a GPU,
hierviz makes those choices for a reference data-centre GPU, described here: an sm90 GPU
(H100/H200 class) with the cuDNN this torch loads (`torch.backends.cudnn.version()`) and torch's
SDPA switches as they are set now (`torch.backends.cuda.*_sdp_enabled`, the priority order,
deterministic algorithms). `describe()` says it in words; `key()` is what the capture cache
keys a capture for it by.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

REFERENCE_CAPABILITY = (9, 0)  # an H100/H200: the data-centre GPU hierviz lowers for without one
# torch's default SDPA priority order (at::SDPBackend values: flash, efficient, math, cudnn, overrideable)
DEFAULT_PRIORITY = (1, 2, 0, 3, 4)
BACKEND_NAMES = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}


@dataclass(frozen=True)
class GpuTarget:
    """A CUDA GPU as torch's SDPA kernel choice sees it: `capability` (major, minor), the runtime
    `cudnn` version as torch reports it (91500 is 9.15.0; None: no cuDNN), which SDPA backends
    torch may use (`enabled`, names from BACKEND_NAMES), the `priority` order torch was set to
    (at::SDPBackend values) and whether deterministic algorithms are required
    (`deterministic`: cuDNN attention is not)."""

    capability: tuple[int, int] = REFERENCE_CAPABILITY
    cudnn: int | None = None
    enabled: tuple[str, ...] = ("flash", "efficient", "math", "cudnn")
    priority: tuple[int, ...] = DEFAULT_PRIORITY
    deterministic: bool = False

    @classmethod
    def current(cls) -> "GpuTarget":
        """The reference GPU with torch's settings as they are now (what a trace on the GPU would read)."""
        switches = {"flash": torch.backends.cuda.flash_sdp_enabled(),
                    "efficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
                    "math": torch.backends.cuda.math_sdp_enabled(),
                    "cudnn": torch.backends.cuda.cudnn_sdp_enabled()}
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        deterministic = torch.are_deterministic_algorithms_enabled() and \
            not torch.is_deterministic_algorithms_warn_only_enabled()
        return cls(REFERENCE_CAPABILITY, cudnn, tuple(name for name, on in switches.items() if on),
                   tuple(torch._C._get_sdp_priority_order()), deterministic)

    def order(self) -> tuple[str, ...]:
        """The SDPA backends torch tries, first to last: its priority order, except that on an
        sm90 or sm10x GPU with cuDNN newer than 9.15 torch puts cuDNN attention first while the
        order is still its default (`check_prefer_cudnn_attention`, CUDA 13 builds)."""
        order = tuple(BACKEND_NAMES[b] for b in self.priority if BACKEND_NAMES.get(b) != "overrideable")
        major = self.capability[0]
        if self.priority == DEFAULT_PRIORITY and self.cudnn is not None and self.cudnn > 91500 and major in (9, 10):
            order = ("cudnn", *(b for b in order if b != "cudnn"))
        return order

    def describe(self) -> str:
        """The GPU in words: 'an sm90 GPU (H100 class), cuDNN 9.24.0'."""
        sm = f"sm{self.capability[0]}{self.capability[1]}"
        cudnn = "no cuDNN" if self.cudnn is None else \
            f"cuDNN {self.cudnn // 10000}.{self.cudnn // 100 % 100}.{self.cudnn % 100}"
        changed = "" if self.enabled == GpuTarget.enabled and self.priority == DEFAULT_PRIORITY else \
            f", SDPA backends {', '.join(self.order())} as torch is set"
        return f"an {sm} GPU{' (H100 class)' if self.capability == REFERENCE_CAPABILITY else ''}, {cudnn}{changed}"

    def key(self) -> tuple:
        """What a capture for this GPU is keyed by."""
        return ("cuda", self.capability, self.cudnn, self.enabled, self.priority, self.deterministic)


__all__ = ["GpuTarget", "REFERENCE_CAPABILITY", "DEFAULT_PRIORITY", "BACKEND_NAMES"]
