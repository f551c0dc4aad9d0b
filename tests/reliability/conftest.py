"""tests/reliability run in their own pytest process: ``local[2,4]`` (2 cores, up to 4
attempts of a task, as in Spark's own tests), which the shared ``local[2]`` session of
tests/spark cannot give (one SparkContext per process, and ``local[2]`` never retries a
task)."""
import pytest


@pytest.fixture(scope="session")
def spark(spark_builder):
    session = spark_builder("local[2,4]", "sparkxml-reliability",
                            {"spark.ui.showConsoleProgress": "false"})
    session.sparkContext.setLogLevel("FATAL")  # the injected faults log pages of traces
    yield session
    session.stop()
