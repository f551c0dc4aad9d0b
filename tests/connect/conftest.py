"""Spark Connect tests. A process holds either a classic SparkContext or a local Spark Connect
server, not both, so these run in their own pytest invocation (see README's test command)."""
import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark_connect():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # As Spark's own test suites do: the local server then binds an ephemeral port instead of
    # 15002, so a Connect server already running on this machine does not break the tests.
    os.environ["SPARK_TESTING"] = "1"
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.remote("local[2]").appName("sparkxml-connect-tests")
               .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    yield session
    session.stop()
