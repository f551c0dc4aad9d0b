"""GBT on Spark with categorical features (categoricalCols) and wide sparse vector columns
(issue 14): the Spark fit trains what the kernels train on the same data, saves and loads,
and refuses bad categorical input by name."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from pyspark.ml.linalg import SparseVector

import sparkxml_kernels
from sparkxml import GBTClassifier, GBTRegressor
from sparkxml_kernels import binning
from sparkxml_kernels.gbt import binned, booster


def _cat_frame(spark, n=800, seed=0):
    rng = np.random.default_rng(seed)
    c1, c2 = rng.integers(0, 12, n), rng.integers(0, 3, n)
    x = rng.normal(size=n)
    eff = rng.normal(size=12) * 2
    y = eff[c1] + np.array([0.0, 1.0, -1.0])[c2] + x + rng.normal(size=n) * 0.2
    pdf = pd.DataFrame({"c1": c1.astype(float), "c2": c2.astype(np.int64), "x": x, "y": y})
    return spark.createDataFrame(pdf).repartition(2), pdf


def test_categorical_cols_fit_save_load(spark, tmp_path):
    df, pdf = _cat_frame(spark)
    model = GBTRegressor(featuresCols=["c1", "c2", "x"], labelCol="y", maxIter=8,
                         numWorkers=2, catSmooth=1.0, categoricalCols=["c1", "c2"],
                         maxBins=300).fit(df)  # uint16 bins: x gets ~300
    assert model.predictor.has_categorical
    X = pdf[["c1", "c2", "x"]].to_numpy(float)
    y = pdf["y"].to_numpy()

    def rmse(m):
        return float(np.sqrt(np.mean((m.predictor.predict_raw(X) - y) ** 2)))

    assert rmse(model) < 0.5 * np.std(y)
    out = model.transform(df).select("y", "prediction").collect()
    got = np.array([r.prediction for r in out]) - np.array([r.y for r in out])
    assert np.sqrt(np.mean(got ** 2)) == pytest.approx(rmse(model), rel=1e-9)
    path = str(tmp_path / "cat")
    model.save(path)
    loaded = sparkxml_kernels.load_model(path)
    np.testing.assert_array_equal(loaded.predict_raw(X), model.predictor.predict_raw(X))
    with pytest.raises(ValueError, match="categorical"):
        model.toDebugString
    with pytest.raises(ValueError, match="categorical"):
        model.trees[0].toDebugString


def test_categorical_input_errors(spark):
    df, _ = _cat_frame(spark, n=200)
    with pytest.raises(ValueError, match="categoricalCols: 'nope'"):
        GBTRegressor(featuresCols=["c1", "x"], labelCol="y", categoricalCols=["nope"],
                     maxIter=2).fit(df)
    with pytest.raises(ValueError, match="feature 'x'"):
        GBTRegressor(featuresCols=["c1", "x"], labelCol="y", categoricalCols=["x"],
                     maxIter=2).fit(df)
    with pytest.raises(ValueError, match="more than 4 categories"):
        GBTRegressor(featuresCols=["c1", "x"], labelCol="y", categoricalCols=["c1"],
                     maxBins=4, maxIter=2).fit(df)


def test_wide_sparse_vectors_train_what_the_kernels_train(spark):
    n, d = 600, 3000
    X = sp.random(n, d, density=0.004, random_state=3, format="csr")
    X.data[:] = 1.0  # a9a-like binary features
    w = np.random.default_rng(1).normal(size=d)
    y = ((X @ w) > 0).astype(float)
    rows = [(SparseVector(d, X.indices[X.indptr[i]:X.indptr[i + 1]].tolist(),
                          [1.0] * int(X.indptr[i + 1] - X.indptr[i])), float(y[i]))
            for i in range(n)]
    df = spark.createDataFrame(rows, ["features", "label"]).repartition(1)
    model = GBTClassifier(maxIter=5, maxDepth=3, numWorkers=1).fit(df)
    # the kernels on the same rows: the sketch of all rows gives the same edges
    edges = binning.edges_from_sketch(binning.sketch(X, None, 256), 256)
    Xb = binned.bin_matrix(X, edges)
    assert isinstance(Xb, binned.SparseBinned)
    ref, _ = booster.train(Xb, y, None, edges, dict(maxIter=5, maxDepth=3,
                                                     objective="logistic"))
    np.testing.assert_allclose(model.predictor.predict_raw(X), ref.predict_raw(X),
                               rtol=1e-9, atol=1e-12)
    out = model.transform(df).select("probability").collect()
    np.testing.assert_allclose([r.probability[1] for r in out], ref.predict(X)[:, 1],
                               rtol=1e-9)


def test_nominal_vector_attributes_are_categorical(spark):
    from pyspark.ml.feature import StringIndexer, VectorAssembler

    from sparkxml._core.categorical import categorical_features

    df = spark.createDataFrame([("a", 1.0, 0.5), ("b", 2.0, 1.5), ("a", 3.0, 2.5)],
                               ["s", "x", "z"])
    df = StringIndexer(inputCol="s", outputCol="s_idx").fit(df).transform(df)
    df = VectorAssembler(inputCols=["x", "s_idx", "z"], outputCol="features").transform(df)
    spec = {"kind": "vector", "col": "features"}
    assert categorical_features(df, spec, None, 3) == [1]
    assert categorical_features(df, spec, ["z"], 3) == [1, 2]
    with pytest.raises(ValueError, match="'nope' is not an attribute name"):
        categorical_features(df, spec, ["nope"], 3)
