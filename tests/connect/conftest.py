"""Spark Connect tests. A process holds either a classic SparkContext or a local Spark Connect
server, not both, so these run in their own pytest invocation (see README's test command)."""
import os
import sys

import pytest


def _local_server_jar_missing() -> bool:
    # pyspark 4.x wheels bundle the Spark Connect server; 3.5 wheels do not (3.5 servers take
    # it from Maven with --packages org.apache.spark:spark-connect_2.12:3.5.x)
    import glob

    import pyspark

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    return not glob.glob(os.path.join(jars, "spark-connect_*.jar"))


@pytest.fixture(scope="session")
def spark_connect():
    if not os.environ.get("SPARK_REMOTE") and _local_server_jar_missing():
        import pyspark

        pytest.skip(f"pyspark {pyspark.__version__} has no Spark Connect server jar to start a "
                    "local server with; set SPARK_REMOTE=sc://host:port to use a running one")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # As Spark's own test suites do: the local server then binds an ephemeral port instead of
    # 15002, so a Connect server already running on this machine does not break the tests.
    os.environ["SPARK_TESTING"] = "1"
    from _jvm import JVM_OPTIONS
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.remote(os.environ.get("SPARK_REMOTE") or "local[2]")
               .appName("sparkxml-connect-tests")
               .config("spark.sql.shuffle.partitions", "4")
               # the local server's JVM (no effect on a remote one): see tests/_jvm.py
               .config("spark.driver.extraJavaOptions", JVM_OPTIONS).getOrCreate())
    yield session
    session.stop()
