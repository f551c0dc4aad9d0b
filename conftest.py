"""The names the docstring examples run with, as doctests (``.ci/run`` lists the modules):
``spark``, a local[2] SparkSession, and ``np``.

The session is started the first time a doctest runs, never for the tests in tests/ (each of
their folders builds its own session, see tests/conftest.py): ``pytest tests/kernels`` must
not start a JVM because of this file.
"""
import os
import sys

import pytest

try:
    from pytest import DoctestItem
except ImportError:  # older pytest: only the private module has it
    from _pytest.doctest import DoctestItem


@pytest.fixture(scope="session")
def _doctest_spark():
    """One local[2] SparkSession for all doctests, its Python workers on this interpreter."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("sparkxml-doctests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               # C1 only, as every JVM of tests/ (tests/_jvm.py says why)
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
               .getOrCreate())
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _doctest_names(request):
    """Give doctests ``spark`` and ``np``; a no-op for every other test."""
    if isinstance(request.node, DoctestItem):
        import numpy

        namespace = request.getfixturevalue("doctest_namespace")
        namespace["np"] = numpy
        namespace["spark"] = request.getfixturevalue("_doctest_spark")
