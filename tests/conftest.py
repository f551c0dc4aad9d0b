"""What all test folders share: the one way to build a classic Spark session and the one data
locator.

Each folder keeps its own ``spark`` fixture, because each runs in its own pytest process with
its own master (one SparkContext a process): tests/spark ``local[2]``, tests/reliability
``local[2,4]`` (task retries); tests/connect starts a Spark Connect session instead. Those
fixtures are thin calls to :func:`build_spark`, through the ``spark_builder`` fixture.
Nothing here imports pyspark before a session is asked for (tests/kernels never does).
"""
import os
import sys

import pytest
from _data import data_path as _data_path
from _jvm import JVM_OPTIONS

# the settings every classic test session runs with
SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.memory": "2g",
    "spark.driver.extraJavaOptions": JVM_OPTIONS,  # C1 only: see tests/_jvm.py
}


def build_spark(master, app_name, conf=None):
    """A classic SparkSession on ``master`` whose Python workers run this interpreter, with
    :data:`SPARK_CONF` and ``conf`` on top."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**SPARK_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@pytest.fixture(scope="session")
def spark_builder():
    """:func:`build_spark`, for the folders' ``spark`` fixtures."""
    return build_spark


@pytest.fixture(scope="session")
def data_path():
    """``data_path(*parts)``: the path of a research data file (see tests/_data.py)."""
    return _data_path
