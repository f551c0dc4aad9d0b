"""FieldEncoder on its documented multi-valued columns (array<string>, array<int>,
array<boolean>), on a column name with a dot, and on a null inside an array."""
import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import types as T

from sparkxml import FieldEncoder
from sparkxml_kernels.fm.fields import FieldVocabulary

SCHEMA = T.StructType([
    T.StructField("user.id", T.StringType()),
    T.StructField("genres", T.ArrayType(T.StringType())),
    T.StructField("tags", T.ArrayType(T.IntegerType())),
    T.StructField("flags", T.ArrayType(T.BooleanType())),
])
ROWS = [("a", ["x", "y"], [3, 7], [True]),
        ("b", ["y"], [7], [False, True]),
        ("a", ["y", "z"], [7, 7], [True])]
COLS = ["user.id", "genres", "tags", "flags"]


@pytest.fixture(scope="module")
def encoder(spark):
    """Before: every array column failed with UNSUPPORTED_GENERATOR.NESTED_IN_EXPRESSIONS
    (an explode nested in a cast), and 'user.id' was read as field id of a struct user."""
    return FieldEncoder(inputCols=COLS).fit(spark.createDataFrame(ROWS, SCHEMA))


def test_multi_valued_and_dotted_columns_fit_and_encode(spark, encoder):
    assert encoder.categories("user.id") == ["a", "b"]
    assert encoder.categories("genres") == ["y", "x", "z"]  # most frequent first
    assert encoder.categories("tags") == [7, 3]
    assert encoder.categories("flags") == [1, 0]  # booleans as 1/0, True 3 times
    assert encoder.fieldStarts == [0, 2, 5, 7]
    got = [r.features for r in encoder.transform(spark.createDataFrame(ROWS, SCHEMA))
           .select("features").collect()]
    # row 0: a -> 0; x, y -> 2 + 1, 2 + 0; 3, 7 -> 5 + 1, 5 + 0; True -> 7 + 0
    assert got[0].indices.tolist() == [0, 2, 3, 5, 6, 7]
    assert got[1].indices.tolist() == [1, 2, 5, 7, 8]
    assert all(v.size == 9 for v in got) and all((v.values == 1.0).all() for v in got)


def test_null_inside_an_array_follows_handle_invalid(spark, encoder):
    """Before: handleInvalid='error' let a null inside an array pass (its error, raised by
    the task's ``FieldVocabulary.encode``, is tested below without Spark: through Spark a
    failing task costs its retries)."""
    bad = spark.createDataFrame([("a", ["x", None], [3], [True]), ("b", ["y"], [7], [False])],
                                SCHEMA)
    skipped = encoder.copy({encoder.handleInvalid: "skip"}).transform(bad).collect()
    assert [r["user.id"] for r in skipped] == ["b"]
    kept = encoder.transform(bad).select("features").collect()  # "keep": x stays, null no
    assert kept[0].features.indices.tolist() == [0, 3, 6, 7]


def test_vocabulary_null_inside_a_list_without_spark():
    voc = FieldVocabulary([np.array(["x", "y"])], ["genres"])
    col = pa.array([["x"], ["y", None], None], pa.list_(pa.string()))
    with pytest.raises(ValueError, match=r"holds a null \(row 1"):
        voc.encode([pa.array([["x"], None])], "error")
    with pytest.raises(ValueError, match=r"holds a null inside its array \(row 1"):
        voc.encode([col.slice(0, 2)], "error")
    indptr, indices, _, keep = voc.encode([col], "skip")
    assert keep.tolist() == [True, False, False] and indices.tolist() == [0]
    indptr, indices, _, keep = voc.encode([col], "keep")
    assert keep.all() and indptr.tolist() == [0, 1, 2, 2] and indices.tolist() == [0, 1]
