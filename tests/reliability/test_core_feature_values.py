"""Feature values a model cannot use, on both input forms (a vector column and numeric
columns): trees and forests route NaN (and nulls) at predict as the model and its loaded
predictor route them; errors name the user's column (never the transform's internal one);
GBT's ``missing`` sentinel works on a vector column, whose values arrive as a read-only Arrow
view."""
import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import (
    DecisionTreeRegressor,
    GBTRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

NAN = float("nan")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(2)
    X = np.round(rng.standard_normal((80, 3)), 1)
    y = X[:, 0] - X[:, 1] + 0.1 * rng.standard_normal(80)
    return X, y


def _vec(spark, X, y):
    return spark.createDataFrame([(Vectors.dense(x), float(v)) for x, v in zip(X.tolist(), y)],
                                 ["feats", "label"])


def _cols(spark, X, y):
    rows = [tuple(None if np.isnan(v) else float(v) for v in x) + (float(t),)
            for x, t in zip(X.tolist(), y)]
    return spark.createDataFrame(rows, ["a", "b", "c", "label"])


@pytest.fixture(scope="module")
def tree_models(spark, data):
    X, y = data
    vec, cols = _vec(spark, X, y), _cols(spark, X, y)
    kw = dict(maxDepth=3, numWorkers=1)
    return {
        "tree/vector": DecisionTreeRegressor(featuresCol="feats", **kw).fit(vec),
        "forest/vector": RandomForestRegressor(featuresCol="feats", numTrees=3, **kw).fit(vec),
        "forest/columns": RandomForestRegressor(featuresCols=["a", "b", "c"], numTrees=3,
                                                **kw).fit(cols),
        "classifier/vector": RandomForestClassifier(featuresCol="feats", numTrees=3, **kw)
        .fit(_vec(spark, X, (y > 0).astype(float))),
    }


@pytest.mark.parametrize("name", ["tree/vector", "forest/vector", "classifier/vector"])
def test_nan_vector_routed_at_transform_as_the_predictor_routes_it(spark, data, tree_models,
                                                                   name):
    """Trees fitted without NaN send a NaN to the child with more training rows (scikit-learn's
    rule): transform gives what the predictor gives, never an error or a NaN prediction."""
    X, y = data
    bad = X[:5].copy()
    bad[3, 1] = NAN
    out = [r["prediction"] for r in tree_models[name].transform(_vec(spark, bad, y[:5]))
           .select("prediction").collect()]
    np.testing.assert_array_equal(out, tree_models[name].predictor.predict(bad))
    assert np.isfinite(out).all()


def test_null_or_nan_in_feature_columns_routed_as_missing(spark, data, tree_models):
    X, y = data
    bad = X[:4].copy()
    bad[2, 2] = NAN  # a null in column 'c'
    out = [r["prediction"] for r in tree_models["forest/columns"]
           .transform(_cols(spark, bad, y[:4])).select("prediction").collect()]
    np.testing.assert_array_equal(out, tree_models["forest/columns"].predictor.predict(bad))


def test_transform_size_error_names_the_users_column(spark, data, tree_models):
    """Before: the message named the transform's internal column '__sparkxml_features'."""
    df = spark.createDataFrame([(Vectors.dense([1.0, 2.0]), 0.0)], ["feats", "label"])
    with pytest.raises(Exception, match=r"featuresCol: column 'feats' has a vector of size 2, "
                                        r"expected 3") as e:
        tree_models["forest/vector"].transform(df).collect()
    assert "column '__sparkxml_features'" not in str(e.value)


@pytest.mark.parametrize("name", ["tree/vector", "forest/columns"])
def test_loaded_predictor_routes_nan_as_the_model(data, tree_models, name, tmp_path):
    X, _ = data
    path = str(tmp_path / "m")
    tree_models[name].save(path)
    pred = sparkxml_kernels.load_model(path)
    bad = X[:4].copy()
    bad[1, 0] = NAN
    np.testing.assert_array_equal(pred.predict(bad), tree_models[name].predictor.predict(bad))


def test_gbt_missing_sentinel_on_both_input_forms(spark, data):
    """Before: on a vector column, ``X[X == missing] = nan`` wrote into the read-only Arrow
    view: 'assignment destination is read-only'."""
    X, y = data
    sentinel, as_nan = X.copy(), X.copy()
    hit = X[:, 1] > 0.8
    sentinel[hit, 1] = -999.0
    as_nan[hit, 1] = NAN
    est = dict(maxIter=4, maxDepth=3, numWorkers=1, seed=1)
    ref = GBTRegressor(featuresCol="feats", **est).fit(_vec(spark, as_nan, y))
    vec = GBTRegressor(featuresCol="feats", missing=-999.0, **est).fit(_vec(spark, sentinel, y))
    cols = GBTRegressor(featuresCols=["a", "b", "c"], missing=-999.0, **est).fit(
        _cols(spark, sentinel, y))
    for m in (vec, cols):
        np.testing.assert_array_equal(m.predictor.threshold, ref.predictor.threshold)
        np.testing.assert_array_equal(m.predictor.value, ref.predictor.value)
    # and at transform: the sentinel rows predict as the NaN rows do
    p_vec = [r[0] for r in vec.transform(_vec(spark, sentinel, y)).select("prediction")
             .collect()]
    p_ref = [r[0] for r in ref.transform(_vec(spark, as_nan, y)).select("prediction")
             .collect()]
    assert p_vec == p_ref
