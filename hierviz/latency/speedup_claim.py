"""When a speed-up may be claimed: the one rule behind every verdict (hv.measure's `verdict`,
hv.tune's crowning and verdict, the explorer's latency and "find fastest" lines, the `verdict`
column of hv.sweep and hv.compare_engines tables).

A speed-up interval `(low, high)` (95%, a bootstrap of eager / candidate: timing.speedup_interval)
says "faster" only when both hold:

- its low end is above MIN_GAIN (1.05). The bootstrap sees the spread of the samples, not a drift
  the two sides did not share (the clock stepping, another process waking between batches on a
  shared machine), which moves a ratio by a few percent; and a gain under 5% is no reason to
  change a deployment setting.
- it is narrow: high / low below MAX_WIDTH (2.0). A wider interval (issue 55's
  "90.25x (95% CI 1.08-147.39x)", timed on a busy machine) says the timings were mostly noise:
  the same data are as consistent with 1.1x as with 100x, so no figure of it means anything.

"slower" mirrors it (high below 1 / MIN_GAIN, the same width bound). Anything else is
"unclear" ("no clear difference"); no interval at all is "unknown".
"""

from __future__ import annotations

from typing import Literal

MIN_GAIN = 1.05   # the low end of a claimed speed-up is above this (the high end of a slow-down below 1 / this)
MAX_WIDTH = 2.0   # the interval's high / low is below this for any claim

Difference = Literal["faster", "slower", "unclear", "unknown"]


def difference(ci: tuple[float, float] | None) -> Difference:
    """What the interval `ci` lets one claim: "faster", "slower", "unclear" or "unknown" (no interval)."""
    if ci is None:
        return "unknown"
    low, high = ci
    if not low > 0 or high / low >= MAX_WIDTH:
        return "unclear"
    if low > MIN_GAIN:
        return "faster"
    if high < 1 / MIN_GAIN:
        return "slower"
    return "unclear"


def clear_gain(ci: tuple[float, float] | None) -> bool:
    """The interval `ci` claims a speed-up (the rule above)."""
    return difference(ci) == "faster"


__all__ = ["MIN_GAIN", "MAX_WIDTH", "Difference", "difference", "clear_gain"]
