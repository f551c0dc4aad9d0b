"""tests/reliability run in their own pytest process: ``local[2,4]`` (2 cores, up to 4
attempts of a task, as in Spark's own tests), which the shared ``local[2]`` session of
tests/spark cannot give (one SparkContext per process, and ``local[2]`` never retries a
task)."""
import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2,4]").appName("sparkxml-reliability")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "2g")
               .getOrCreate())
    session.sparkContext.setLogLevel("FATAL")  # the injected faults log pages of traces
    yield session
    session.stop()

