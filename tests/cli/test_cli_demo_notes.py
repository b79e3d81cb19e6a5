"""`hierviz demo`'s note on noisy timings counts the sweep's rows whose coefficient of variation
is above NOISY_CV, read from the table's `cv` column (not from the words of the warnings)."""

from __future__ import annotations

import pandas as pd

from hierviz.cli.commands import noisy_rows
from hierviz.latency import NOISY_CV


def test_the_noisy_note_counts_rows_above_the_noise_limit() -> None:
    table = pd.DataFrame({"min_block_size": [1, 2, 3, 5], "cv": [NOISY_CV / 2, NOISY_CV * 3, None, NOISY_CV * 1.5]})
    assert noisy_rows(table) == 2


def test_a_sweep_that_measured_nothing_has_no_noisy_row() -> None:
    assert noisy_rows(pd.DataFrame({"min_block_size": [1, 2], "subgraphs": [3, 1]})) == 0
