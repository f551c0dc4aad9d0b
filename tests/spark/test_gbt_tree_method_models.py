"""treeMethod "approx" and "exact", and quantised gradients, on Spark: the same model on one
and two workers, accuracy on the LightGBM binary sample, persistence, and options that do not
apply."""
import numpy as np
import pandas as pd
import pytest
from _data import data_path
from pyspark.ml.feature import VectorAssembler

from sparkxml import GBTClassifier, GBTRegressor
from sparkxml_kernels.gbt.metrics import auc_exact

FCOLS = [f"f{i}" for i in range(1, 29)]
PARAMS = dict(maxIter=12, maxDepth=4, stepSize=0.3, seed=3)


def _read(name, rows=None):
    a = np.loadtxt(data_path("lightgbm_binary", name))[:rows]
    pdf = pd.DataFrame(a[:, 1:], columns=FCOLS)
    pdf.insert(0, "label", a[:, 0])
    return pdf


@pytest.fixture(scope="module")
def binary(spark):
    va = VectorAssembler(inputCols=FCOLS, outputCol="features")
    train = va.transform(spark.createDataFrame(_read("binary.train", 3000))) \
        .select("features", "label").repartition(3).cache()
    test = va.transform(spark.createDataFrame(_read("binary.test"))).cache()
    train.count(), test.count()
    return train, test


def _probs(model, df):
    return np.array([r[0][1] for r in model.transform(df).select("probability").collect()])


@pytest.mark.parametrize("method", ["approx", "exact"])
def test_same_model_1_and_2_workers(binary, method):
    train, test = binary
    te = test.select("label").toPandas()["label"].to_numpy()
    one = GBTClassifier(numWorkers=1, treeMethod=method, **PARAMS).fit(train)
    two = GBTClassifier(numWorkers=2, treeMethod=method, **PARAMS).fit(train)
    assert two.summary.workerInfo[0]["world_size"] == 2
    p1, p2 = _probs(one, test), _probs(two, test)
    np.testing.assert_allclose(p1, p2, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(one.predictor.feature, two.predictor.feature)
    np.testing.assert_array_equal(one.predictor.threshold, two.predictor.threshold)
    assert auc_exact(te, p1) > 0.75
    assert one.getTreeMethod() == method


def test_exact_splits_on_every_value_and_save_load(binary, tmp_path):
    train, test = binary
    est = GBTRegressor(treeMethod="exact", maxIter=2, maxDepth=3)
    path = str(tmp_path / "est")
    est.save(path)
    assert type(est).load(path).getTreeMethod() == "exact"
    model = est.fit(train)
    # exact split values are midpoints between two training values of the node's feature
    # (the node's neighbours: other rows may hold a value in between)
    X = np.array([r[0].toArray() for r in train.select("features").collect()])
    p = model.predictor
    for i in np.flatnonzero(p.left >= 0):
        v = np.unique(X[:, p.feature[i]])
        t = p.threshold[i]
        lo = v[v < t]
        assert lo.size and np.isclose(2 * t - lo, v[np.searchsorted(v, 2 * t - lo)
                                                    .clip(0, v.size - 1)]).any()
    model.save(str(tmp_path / "m"))
    loaded = type(model).load(str(tmp_path / "m"))
    assert loaded.getTreeMethod() == "exact"
    np.testing.assert_array_equal(loaded.predictor.threshold, p.threshold)


def test_options_that_do_not_apply(spark, binary):
    train, _ = binary
    with pytest.raises(ValueError, match="treeMethod='greedy' is invalid: must be one of"):
        GBTClassifier(treeMethod="greedy").fit(train)
    with pytest.raises(ValueError, match="grows depthwise only"):
        GBTClassifier(treeMethod="exact", growPolicy="lossguide", maxLeaves=8).fit(train)
    df = spark.createDataFrame(pd.DataFrame({"c": [0, 1, 2, 1] * 5, "x": np.arange(20.0),
                                             "label": [0.0, 1.0] * 10}))
    with pytest.raises(ValueError, match="does not split categorical"):
        GBTClassifier(featuresCols=["c", "x"], categoricalCols=["c"],
                      treeMethod="approx").fit(df)
    # more distinct values than exact's uint16 bins
    big = spark.range(70000).selectExpr("cast(id as double) * 0.5 as x",
                                        "cast(id % 2 as double) as label")
    with pytest.raises(ValueError, match="feature 'x' has more than 65534 distinct values"):
        GBTClassifier(featuresCols=["x"], treeMethod="exact", maxIter=1).fit(big)


def test_quantised_gradients_same_model_1_and_2_workers_and_save_load(binary, tmp_path):
    train, test = binary
    te = test.select("label").toPandas()["label"].to_numpy()
    q = dict(PARAMS, useQuantizedGrad=True, numGradQuantBins=8)
    one = GBTClassifier(numWorkers=1, **q).fit(train)
    two = GBTClassifier(numWorkers=2, **q).fit(train)
    plain = GBTClassifier(numWorkers=1, **PARAMS).fit(train)
    assert two.summary.workerInfo[0]["world_size"] == 2
    # integer histograms: the sums, and so the trees, do not depend on the workers
    for k, v in one.predictor.to_arrays().items():
        np.testing.assert_array_equal(two.predictor.to_arrays()[k], v, err_msg=k)
    assert not np.array_equal(one.predictor.value, plain.predictor.value)
    a_q, a_plain = auc_exact(te, _probs(one, test)), auc_exact(te, _probs(plain, test))
    assert a_q > 0.75 and abs(a_q - a_plain) < 0.02
    assert one.getUseQuantizedGrad() and one.getNumGradQuantBins() == 8
    assert not one.getQuantTrainRenewLeaf() and one.getStochasticRounding()
    one.save(str(tmp_path / "m"))
    loaded = type(one).load(str(tmp_path / "m"))
    assert loaded.getUseQuantizedGrad() and loaded.getNumGradQuantBins() == 8
    np.testing.assert_array_equal(loaded.predictor.value, one.predictor.value)


def test_quantised_gradients_bad_params(binary):
    train, _ = binary
    with pytest.raises(ValueError, match="numGradQuantBins"):
        GBTClassifier(useQuantizedGrad=True, numGradQuantBins=1).fit(train)
    with pytest.raises(ValueError, match="quantTrainRenewLeaf cannot be combined"):
        GBTRegressor(useQuantizedGrad=True, quantTrainRenewLeaf=True, maxIter=2,
                     monotoneConstraints=[1] + [0] * 27).fit(train)
