"""Spark Connect tests. A process holds either a classic SparkContext or a local Spark Connect
server, not both, so these run in their own pytest invocation (see README's test command)."""
import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark_connect():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.remote("local[2]").appName("sparkxml-connect-tests")
               .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    yield session
    session.stop()
