"""sparkxml.datasets: files -> DataFrames of VectorUDT features and array<int> labels."""
import time

import numpy as np
import pytest
from _data import data_path
from pyspark.ml.linalg import SparseVector, VectorUDT
from pyspark.sql import types as T

from sparkxml import datasets as DS
from sparkxml_kernels import formats as F


def test_read_xc_bibtex(spark):
    path = data_path("bibtex", "xc_split", "bibtex_train.txt")
    t = time.perf_counter()
    df = DS.read_xc(spark, path)
    n = df.count()
    elapsed = time.perf_counter() - t
    print(f"\nBibtex train: read_xc + count in {elapsed:.2f} s")
    assert n == 4880
    assert isinstance(df.schema["features"].dataType, VectorUDT)
    assert df.schema["labels"].dataType == T.ArrayType(T.IntegerType(), False)
    ref = F.read_xc(path)
    xi, xx, xd, d = DS.to_csr(df)
    assert d == 1836
    assert np.array_equal(xi, ref[0]) and np.array_equal(xx, ref[1])
    assert np.array_equal(xd, ref[2].astype(np.float64))
    yi, yy = DS.labels_to_csr(df)
    assert np.array_equal(yi, ref[3]) and np.array_equal(yy, ref[4])
    row = df.first()
    assert isinstance(row.features, SparseVector) and row.features.size == 1836
    assert row.labels == [18, 87, 135]


def test_read_smat_pair(spark, tmp_path):
    X = (np.array([0, 2, 2, 3]), np.array([1, 4]), np.array([0.5, 2.0]))
    fx, fy = tmp_path / "X.txt", tmp_path / "Y.txt"
    F.write_smat(fx, X[0], np.array([1, 4, 0]), np.array([0.5, 2.0, -1.0]), 5)
    F.write_smat(fy, np.array([0, 1, 1, 3]), np.array([2, 0, 1]), np.array([1.0, 1.0, 0.0]), 3)
    rows = DS.read_smat(spark, fx, fy).collect()
    assert [r.labels for r in rows] == [[2], [], [0]]         # a zero entry is not a label
    assert rows[0].features == SparseVector(5, [1, 4], [0.5, 2.0])
    assert rows[1].features.numNonzeros() == 0
    assert rows[2].features == SparseVector(5, [0], [-1.0])
    F.write_smat(fy, np.array([0, 1]), np.array([2]), np.array([1.0]), 3)
    with pytest.raises(ValueError, match="has 3 rows but .* has 1"):
        DS.read_smat(spark, fx, fy)


def test_read_arff_enron_label_names(spark):
    df = DS.read_arff_multilabel(spark, data_path("enron", "enron-test.arff"),
                                 data_path("enron", "enron.xml"), numPartitions=3)
    names = df.schema["labels"].metadata["labelNames"]
    assert len(names) == 53 and names[0] == "A.A1"
    assert df.count() == 579
    assert df.first().features.size == 1001


def test_read_svmlight_rank_with_query_file(spark):
    path = data_path("lightgbm_rank", "rank.test")
    query = data_path("lightgbm_rank", "rank.test.query")
    df = DS.read_svmlight(spark, path, query)
    assert df.columns == ["label", "features", "qid"]
    assert [f.dataType for f in df.schema.fields][::2] == [T.DoubleType(), T.LongType()]
    rows = df.collect()
    assert len(rows) == 768 and rows[0].features.size == 300
    qid = np.array([r.qid for r in rows])
    assert np.array_equal(np.bincount(qid), np.loadtxt(query, dtype=int))
    no_q = DS.read_svmlight(spark, path)
    assert no_q.columns == ["label", "features"]


def test_malformed_file_raises_before_spark(spark, tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("2 5 3\n0 1:1\n1 9:1\n")
    with pytest.raises(ValueError, match=r"bad\.txt, line 3: feature index 9 is out of range"):
        DS.read_xc(spark, p)


def test_from_csr_extra_columns_and_partitions(spark):
    df = DS.from_csr(spark, np.array([0, 1, 1, 3]), np.array([2, 0, 1]),
                     np.array([1.0, 2.0, 3.0]), 4, labels=(np.array([0, 0, 1, 1]),
                                                            np.array([7])),
                     columns={"w": np.array([0.5, 1.0, 2.0]), "g": np.array([1, 1, 2])},
                     numPartitions=2)
    assert df.columns == ["features", "labels", "w", "g"]
    rows = sorted(df.collect(), key=lambda r: r.w)
    assert [r.labels for r in rows] == [[], [7], []]
    assert rows[2].features == SparseVector(4, [0, 1], [2.0, 3.0])
    assert [r.g for r in rows] == [1, 1, 2]
