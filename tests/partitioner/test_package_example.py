"""The partitioner package's worked example (its docstring: five ops, a priority, three
min_block_sizes and the subgraphs each gives) is what hv.partition does: run as a doctest."""

from __future__ import annotations

import doctest

import hierviz.partitioner


def test_the_partitioner_docstring_example_is_true() -> None:
    module = hierviz.partitioner
    assert module.__doc__ is not None
    test = doctest.DocTestParser().get_doctest(module.__doc__, {}, module.__name__, module.__file__, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 8 and result.failed == 0
