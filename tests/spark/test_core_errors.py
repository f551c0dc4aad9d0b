"""Set-up errors surface as one line that says what to do."""
import pytest

from sparkxml import LinearSVC
from sparkxml._core.base import _workers_missing_sparkxml


def test_workers_without_sparkxml_is_one_clear_line(spark, monkeypatch):
    trace = ("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
             "  File \"/usr/lib/python3/pyspark/worker.py\", line 1, in main\n"
             "ModuleNotFoundError: No module named 'sparkxml'\n" + "\tat org.apache\n" * 250)
    msg = _workers_missing_sparkxml(RuntimeError(trace))
    assert msg is not None and "\n" not in msg and "PYSPARK_PYTHON" in msg
    assert _workers_missing_sparkxml(RuntimeError("No module named 'sparkxml_kernels'")) \
        .startswith("Spark's Python workers cannot import sparkxml_kernels")
    assert _workers_missing_sparkxml(ValueError("labelCol: column 'x' is not in")) is None

    def fail(self, dataset):
        raise RuntimeError(trace)

    monkeypatch.setattr(LinearSVC, "_fit_validated", fail)
    df = spark.createDataFrame([(1.0,)], ["x"])
    with pytest.raises(RuntimeError, match="^Spark's Python workers cannot import sparkxml: ") \
            as info:
        LinearSVC().fit(df)
    assert info.value.__cause__ is None and info.value.__suppress_context__
