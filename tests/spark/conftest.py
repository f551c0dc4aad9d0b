import pytest


@pytest.fixture(scope="session")
def spark(spark_builder):
    """One local[2] SparkSession for all of tests/spark (workers run this interpreter)."""
    session = spark_builder("local[2]", "sparkxml-tests")
    yield session
    session.stop()
