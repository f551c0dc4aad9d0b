"""FastXML and PfastreXML on local[2]: the model depends only on the rows (content order), and
input the trees must not absorb silently (repeated labels, nulls, NaN) is handled."""
import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

from sparkxml import FastXML, PfastreXML
from sparkxml.synthetic import make_multilabel

ESTIMATORS = {"FastXML": FastXML, "PfastreXML": PfastreXML}


@pytest.fixture(scope="module")
def rows():
    X, Y = make_multilabel(n_rows=260, n_features=80, n_labels=14, seed=11, topic_size=6,
                           noise=3)
    (xi, xj, xv), (yi, yj) = X, Y
    return [(Vectors.sparse(80, xj[xi[r]:xi[r + 1]].tolist(), xv[xi[r]:xi[r + 1]].tolist()),
             yj[yi[r]:yi[r + 1]].tolist()) for r in range(len(xi) - 1)]


def _frame(spark, rows, seed, parts, repeat_label=False):
    perm = np.random.default_rng(seed).permutation(len(rows))
    rows = [(f, y + y[:1]) for f, y in rows] if repeat_label else rows
    return spark.createDataFrame([rows[i] for i in perm], ["features", "labels"]) \
        .repartition(parts)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_same_rows_same_model_whatever_partitioning_and_workers(spark, rows, name):
    """The issue's example: the same rows, shuffled into 1, 2 and 3 partitions, with 1 and 2
    workers, give one model (and so identical predictions). The third copy repeats a label in
    every row: a repeat counts once."""
    est = ESTIMATORS[name]
    models = [est(numTrees=3, seed=7, maxLeaf=8, numWorkers=nw)
              .fit(_frame(spark, rows, s, p, repeat_label=p == 3))
              for s, (p, nw) in enumerate([(1, 1), (2, 2), (3, 1)])]
    first = models[0]._arrays
    for m in models[1:]:
        assert m._arrays.keys() == first.keys()
        for key in first:
            np.testing.assert_array_equal(m._arrays[key], first[key], err_msg=key)
    test = spark.createDataFrame(rows[:60], ["features", "labels"])
    preds = [m.transform(test).select("prediction", "scores").collect() for m in models[:2]]
    assert preds[0] == preds[1] and len(preds[0]) == 60
    if name == "FastXML":
        # the input order is another order, so another forest (what rowOrder="input" keeps)
        other = est(numTrees=3, seed=7, maxLeaf=8, numWorkers=1, rowOrder="input") \
            .fit(_frame(spark, rows, 99, 1))
        assert not all(np.array_equal(other._arrays[k], first[k]) for k in first)


def test_nulls_and_nan_are_named(spark, rows):
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("features", VectorUDT()),
                           T.StructField("labels", T.ArrayType(T.IntegerType()))])
    good = rows[:30]
    fit = FastXML(numTrees=1, numWorkers=1).fit
    with pytest.raises(ValueError, match="labelsCol: column 'labels' holds 1 null labels array"):
        fit(spark.createDataFrame(good + [(rows[0][0], None)], schema))
    with pytest.raises(ValueError, match="featuresCol: column 'features' holds 1 null feature"):
        fit(spark.createDataFrame(good + [(None, [1])], schema))
    with pytest.raises(ValueError, match="labelsCol: column 'labels' holds 1 null label id"):
        fit(spark.createDataFrame(good + [(rows[0][0], [1, None])], schema))
    nan = Vectors.sparse(80, [0, 3], [1.0, float("nan")])
    with pytest.raises(ValueError, match="featuresCol: column 'features' holds 1 NaN"):
        PfastreXML(numTrees=1, numWorkers=1).fit(spark.createDataFrame(good + [(nan, [1])],
                                                                       schema))
    model = FastXML(numTrees=1, numWorkers=1, maxLeaf=8).fit(spark.createDataFrame(good, schema))
    bad = spark.createDataFrame([(nan, [1])], schema)
    with pytest.raises(Exception, match="featuresCol: column 'features' holds NaN or infinite"):
        model.transform(bad).collect()
    with pytest.raises(ValueError, match="rowOrder='shuffled' is invalid"):
        FastXML(rowOrder="shuffled").fit(spark.createDataFrame(good, schema))
