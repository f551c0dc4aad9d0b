import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for all of tests/spark (workers run this interpreter)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("sparkxml-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "2g")
               .getOrCreate())
    yield session
    session.stop()
