"""A support source's verdict on one node: the verdict codes (`SUPPORTED`, `UNSUPPORTED`,
`VALIDATOR`, the partitioner's reason codes of the same names), `Verdict(ok, code, why)`, the
accepting verdict `ACCEPTED` and `refused(why, code)`, which every support source answers with.
"""

from __future__ import annotations

from dataclasses import dataclass


# The codes of a verdict (the partitioner's reason codes of the same names, hierviz.partitioner).
SUPPORTED = "supported"
UNSUPPORTED = "unsupported"
VALIDATOR = "validator_rejected"  # a converter exists, but its capability validator refuses the node


@dataclass(frozen=True)
class Verdict:
    """What a support source says of one node: `ok`, else the refusal's `code` and `why`."""

    ok: bool
    code: str = SUPPORTED
    why: str = ""


ACCEPTED = Verdict(True)


def refused(why: str, code: str = UNSUPPORTED) -> Verdict:
    return Verdict(False, code, why)


__all__ = ["SUPPORTED", "UNSUPPORTED", "VALIDATOR", "Verdict", "ACCEPTED", "refused"]
