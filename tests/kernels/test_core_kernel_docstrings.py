"""Every docstring example of ``sparkxml_kernels`` that needs no Spark runs as written (``np``
is in scope); those that fit a model with ``spark`` first run in
tests/spark/test_core_docstrings.py."""
import pytest
from _doctests import cases, run


@pytest.mark.parametrize("module,name", cases("sparkxml_kernels", spark=False))
def test_docstring_example_runs(module, name):
    run(module, name)
