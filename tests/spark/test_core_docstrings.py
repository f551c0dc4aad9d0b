"""Every docstring example of ``sparkxml``, and those of ``sparkxml_kernels`` that fit a model
with ``spark`` first, run as written on the folder's local[2] session (``spark`` and ``np``
are in scope)."""
import pytest
from _doctests import cases, run


@pytest.mark.parametrize("module,name",
                         cases("sparkxml") + cases("sparkxml_kernels", spark=True))
def test_docstring_example_runs(spark, module, name):
    run(module, name, spark=spark)
