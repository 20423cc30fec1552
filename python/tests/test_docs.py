"""The examples in the docstrings run and print what they say."""

import doctest

import numpy as np
import pytest

import asym

PUBLIC = [asym.kselect, asym.sort, asym.sssp, asym.knapsack, asym.Heap, asym.RBTree]


@pytest.mark.parametrize("obj", PUBLIC, ids=lambda o: o.__name__)
def test_docstring_examples(obj):
    assert "Parameters\n" in obj.__doc__ and "Examples\n" in obj.__doc__
    test = doctest.DocTestParser().get_doctest(
        obj.__doc__, {"np": np, "asym": asym}, obj.__name__, None, 0
    )
    assert test.examples, obj.__name__
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"{obj.__name__}: {runner.failures} examples failed"
