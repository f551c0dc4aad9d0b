"""Trees and forests on input that used to reach the workers: labels far above the classes
that occur, histograms too large to allocate, vectors of size 0, all-zero weights (each now
a ValueError on the driver naming the column, before the sketch and the training), and a
single training row (a bootstrap sample drew no row: ZeroDivisionError in the barrier task,
now a model)."""
import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

from sparkxml import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)


def _df(spark, X, y, w=None):
    rows = [(Vectors.dense(x), float(v)) + (() if w is None else (float(w[i]),))
            for i, (x, v) in enumerate(zip(np.asarray(X).tolist(), y))]
    return spark.createDataFrame(rows, ["features", "label"] + ([] if w is None else ["w"]))


@pytest.mark.parametrize("est", [RandomForestClassifier(numTrees=2, numWorkers=1),
                                 DecisionTreeClassifier(numWorkers=1)],
                         ids=["forest", "tree"])
@pytest.mark.parametrize("big", [1e9, 2.0 ** 31])
def test_huge_label_refused_on_the_driver(spark, est, big):
    """Before: 'Unable to allocate 1.86 TiB' after 4 stage attempts."""
    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match=r"labelCol: column 'label' holds the label .*, so "
                                         r"numClasses would be \d+, above the limit of 10000"):
        est.fit(_df(spark, X, [0, 1] * 19 + [1, big]))


def test_label_far_above_the_distinct_labels_refused(spark):
    """Before: a label of 1e4 trained 10,001 classes silently (and classWeight='balanced'
    with 1e8 hung the driver)."""
    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match=r"holds the label 500.0, so numClasses would be 501, "
                                         r"but only about 3 distinct labels occur: re-index"):
        RandomForestClassifier(numTrees=2, numWorkers=1, classWeight="balanced").fit(
            _df(spark, X, [0, 1] * 19 + [1, 500]))


def test_classes_times_bins_bounded(spark):
    """5,000 classes x 257 bins x 40 features with float weights: 1.1 GiB per node."""
    n = 5000
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 40))
    with pytest.raises(ValueError, match=r"5000 classes x up to 257 bins x 40 features make "
                                         r"1.1 GiB per node histogram, above the limit of "
                                         r"1 GiB"):
        DecisionTreeClassifier(numWorkers=1, weightCol="w").fit(
            _df(spark, X, np.arange(n), w=rng.uniform(0.5, 2.0, n)))


def test_vectors_of_size_zero_refused(spark):
    df = spark.createDataFrame([(Vectors.dense([]), 1.0)] * 4, ["features", "label"])
    for est in (DecisionTreeRegressor(numWorkers=1), RandomForestRegressor(numWorkers=1)):
        with pytest.raises(ValueError, match=r"featuresCol: column 'features' holds vectors of "
                                             r"size 0"):
            est.fit(df)


def test_all_zero_weights_refused(spark):
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match=r"weightCol: column 'w' is 0 on every row"):
        RandomForestRegressor(numWorkers=1, weightCol="w").fit(_df(spark, X, [1.0] * 6,
                                                                   w=[0.0] * 6))


@pytest.mark.parametrize("est, label", [
    (RandomForestRegressor(numTrees=5, numWorkers=1), 3.5),
    (RandomForestClassifier(numTrees=5, numWorkers=1), 1.0),
    (DecisionTreeRegressor(numWorkers=1), 3.5)], ids=["rf-regressor", "rf-classifier", "tree"])
def test_single_row_trains(spark, est, label):
    df = _df(spark, [[1.0, 2.0]], [label])
    model = est.fit(df)
    assert [r[0] for r in model.transform(df).select("prediction").collect()] == [label]
