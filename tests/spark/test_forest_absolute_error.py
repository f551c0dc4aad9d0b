"""Criterion absolute_error on local[2]: scikit-learn's MAE tree node for node on diabetes
with 2 workers, persistence and the kernel loader, forests the same for any numWorkers, and
what it refuses (missing features, monotonic constraints) before training."""

import numpy as np
import pytest

import sparkxml_kernels
from sparkxml import DecisionTreeRegressor, RandomForestRegressor
from sparkxml.forest.tree import DecisionTreeRegressionModel

sklearn = pytest.importorskip("sklearn")
from _tree_frames import FIELDS  # noqa: E402
from _tree_frames import frame as _frame  # noqa: E402
from sklearn.datasets import load_diabetes  # noqa: E402
from sklearn.tree import DecisionTreeRegressor as SkTreeRegressor  # noqa: E402


@pytest.fixture(scope="module")
def diabetes(spark):
    X, y = load_diabetes(return_X_y=True)
    return X, y, _frame(spark, X, y)


def test_mae_tree_equals_sklearn_saves_and_serves(diabetes, tmp_path):
    X, y, df = diabetes
    model = DecisionTreeRegressor(criterion="absolute_error", maxDepth=64, maxBins=512,
                                  numWorkers=2).fit(df)
    assert [i["world_size"] for i in model.trainingInfo["workerInfo"]] == [2, 2]
    sk = SkTreeRegressor(criterion="absolute_error", random_state=0).fit(X, y)
    ours = model.treeArrays(0)
    for f in FIELDS:
        np.testing.assert_array_equal(ours[f], getattr(sk.tree_, f), err_msg=f)
    Xr = np.array([r[0].toArray() for r in df.select("features").collect()])
    pred = np.array([r[0] for r in model.transform(df).select("prediction").collect()])
    np.testing.assert_array_equal(pred, sk.predict(Xr))  # leaf medians
    path = str(tmp_path / "dt_mae")
    model.save(path)
    loaded = DecisionTreeRegressionModel.load(path)
    np.testing.assert_array_equal(loaded.treeArrays(0)["value"], ours["value"])
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict(Xr), pred)


def test_mae_forest_same_for_any_workers(diabetes):
    """(ExtraTreesRegressor's random splits: tests/kernels, the same kernels.)"""
    X, y, df = diabetes
    cls = RandomForestRegressor
    kw = dict(criterion="absolute_error", numTrees=4, maxDepth=5, seed=3)
    a = cls(numWorkers=2, **kw).fit(df)
    b = cls(numWorkers=1, **kw).fit(df.repartition(3))
    for t in range(4):
        for f in FIELDS:
            np.testing.assert_array_equal(a.treeArrays(t)[f], b.treeArrays(t)[f], err_msg=f)
    pred = np.array([r[0] for r in a.transform(df).select("prediction").collect()])
    assert np.mean(np.abs(pred - df.toPandas()["label"].to_numpy())) < np.mean(
        np.abs(y - np.median(y)))  # better than the constant median


def test_mae_refuses_missing_features_and_monotonic_constraints(spark, diabetes):
    X, y, _ = diabetes
    Xn = X[:60].copy()
    Xn[5, 2] = np.nan
    df = _frame(spark, Xn, y[:60], parts=1)
    with pytest.raises(ValueError, match="absolute_error.*missing|missing.*absolute_error"):
        DecisionTreeRegressor(criterion="absolute_error", numWorkers=1).fit(df)
    with pytest.raises(ValueError, match="monotonicConstraints"):
        RandomForestRegressor(criterion="absolute_error", numWorkers=1,
                              monotonicConstraints=[1] + [0] * 9).fit(df)
