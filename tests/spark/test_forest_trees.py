"""Decision trees and random forests on local[2]: scikit-learn's trees node for node,
determinism across workers and partitioning, persistence, Pipelines and tuning, bad input."""

import json

import numpy as np
import pytest
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.evaluation import MulticlassClassificationEvaluator
from pyspark.ml.linalg import Vectors
from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

import sparkxml_kernels
from sparkxml import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreesClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sparkxml.forest.extra import ExtraTreesClassificationModel
from sparkxml.forest.forest import RandomForestClassificationModel
from sparkxml.forest.tree import DecisionTreeClassificationModel

sklearn = pytest.importorskip("sklearn")
from _data import data_path  # noqa: E402
from _tree_frames import FIELDS  # noqa: E402
from _tree_frames import frame as _frame  # noqa: E402
from sklearn.datasets import load_diabetes, load_svmlight_file  # noqa: E402
from sklearn.tree import DecisionTreeClassifier as SkTree  # noqa: E402
from sklearn.tree import DecisionTreeRegressor as SkTreeRegressor  # noqa: E402


@pytest.fixture(scope="module")
def pen(spark):
    X, y = load_svmlight_file(data_path("pendigits", "pendigits"), n_features=16)
    Xt, yt = load_svmlight_file(data_path("pendigits", "pendigits.t"), n_features=16)
    X, Xt, y, yt = X.toarray(), Xt.toarray(), y - 1, yt - 1
    return X, y, Xt, yt, _frame(spark, X, y), _frame(spark, Xt, yt)


@pytest.mark.parametrize("crit", ["gini", "entropy"])
def test_decision_tree_equals_sklearn_node_for_node(pen, crit):
    X, y, _, _, train, _ = pen
    model = DecisionTreeClassifier(criterion=crit, maxDepth=64, seed=0,
                                   numWorkers=2).fit(train)
    assert [i["world_size"] for i in model.trainingInfo["workerInfo"]] == [2, 2]
    sk = SkTree(criterion=crit, random_state=0).fit(X, y)
    ours = model.treeArrays(0)
    for f in FIELDS:
        np.testing.assert_array_equal(ours[f], getattr(sk.tree_, f), err_msg=f)
    np.testing.assert_allclose(model.featureImportances.toArray(), sk.feature_importances_,
                               rtol=1e-12, atol=1e-15)


def test_regression_tree_equals_sklearn_on_diabetes(spark):
    d = load_diabetes()
    df = _frame(spark, d.data, d.target)
    model = DecisionTreeRegressor(maxDepth=64, maxBins=512, numWorkers=2).fit(df)
    sk = SkTreeRegressor(random_state=0).fit(d.data, d.target).tree_
    ours = model.treeArrays(0)
    for f in FIELDS:
        np.testing.assert_array_equal(ours[f], getattr(sk, f), err_msg=f)
    pred = np.array([r[0] for r in model.transform(df).select("prediction").collect()])
    order = np.array([r[0].toArray() for r in df.select("features").collect()])
    np.testing.assert_array_equal(pred, sk.predict(order.astype(np.float32)).ravel())


@pytest.fixture(scope="module")
def pen_nan(spark, pen):
    """1000 pendigits rows with 10% of the entries of features 0-7 missing (NaN)."""
    X, y = pen[0][:1000].copy(), pen[1][:1000]
    rng = np.random.default_rng(0)
    X[:, :8][rng.random((1000, 8)) < 0.1] = np.nan
    return X, y, _frame(spark, X, y)


def test_tree_with_missing_values_equals_sklearn_and_survives_save(pen_nan, tmp_path):
    X, y, df = pen_nan
    model = DecisionTreeClassifier(maxDepth=9, numWorkers=2).fit(df)
    sk = SkTree(random_state=0, max_depth=9).fit(X, y)
    ours = model.treeArrays(0)
    for f in FIELDS:
        np.testing.assert_array_equal(ours[f], getattr(sk.tree_, f), err_msg=f)
    inner = ours["children_left"] >= 0
    np.testing.assert_array_equal(ours["missing_go_to_left"][inner],
                                  sk.tree_.missing_go_to_left[inner])
    rows = df.select("features").collect()
    Xr = np.array([r[0].toArray() for r in rows])
    pred = np.array([r[0] for r in model.transform(df).select("prediction").collect()])
    np.testing.assert_array_equal(pred, sk.predict(Xr))  # NaN rows routed as scikit-learn
    path, sk_path = model.costComplexityPruningPath(), sk.cost_complexity_pruning_path(X, y)
    np.testing.assert_array_equal(path["ccp_alphas"], sk_path.ccp_alphas)
    np.testing.assert_array_equal(path["impurities"], sk_path.impurities)
    path = str(tmp_path / "dt_nan")
    model.save(path)
    loaded = DecisionTreeClassificationModel.load(path)
    np.testing.assert_array_equal(loaded.treeArrays(0)["missing_go_to_left"],
                                  ours["missing_go_to_left"])
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict(Xr), pred)


def test_ccp_alpha_prunes_as_sklearn_and_refuses_negative(pen_nan):
    X, y, df = pen_nan
    sk9 = SkTree(random_state=0, max_depth=9)
    alpha = float(sk9.cost_complexity_pruning_path(X, y).ccp_alphas[-8])
    model = DecisionTreeClassifier(maxDepth=9, numWorkers=2, ccpAlpha=alpha).fit(df)
    sk = sk9.set_params(ccp_alpha=alpha).fit(X, y)
    ours = model.treeArrays(0)
    for f in FIELDS:
        np.testing.assert_array_equal(ours[f], getattr(sk.tree_, f), err_msg=f)
    assert model.getCcpAlpha() == alpha
    # leafCol: per tree, the reached leaf's index among the leaves left to right
    rows = model.setLeafCol("leaf").transform(df).select("features", "leaf").collect()
    Xr = np.array([r[0].toArray() for r in rows])
    leaf = np.array([r[1].toArray() for r in rows])
    p = model.predictor
    np.testing.assert_array_equal(leaf, p.leaf_ordinals()[p.apply(Xr)])
    assert leaf.max() == (ours["children_left"] < 0).sum() - 1
    with pytest.raises(ValueError, match="ccpAlpha"):
        DecisionTreeClassifier(ccpAlpha=-0.1)._validate_params()


def test_class_weight_dict_equals_sklearn_saves_and_refuses_absent_class(spark, pen_nan,
                                                                        tmp_path):
    X, y, df = pen_nan
    cw = {0: 3.0, 4: 2.0, 7: 5.0}  # integer weights: exact sums, node for node
    model = DecisionTreeClassifier(maxDepth=6, numWorkers=2, classWeight=cw).fit(df)
    sk = SkTree(random_state=0, max_depth=6, class_weight=cw).fit(X, y)
    ours = model.treeArrays(0)
    for f in FIELDS:
        np.testing.assert_array_equal(ours[f], getattr(sk.tree_, f), err_msg=f)
    path = str(tmp_path / "cw")
    model.save(path)
    assert json.loads(DecisionTreeClassificationModel.load(path).getClassWeight()) == \
        {"0": 3.0, "4": 2.0, "7": 5.0}
    with pytest.raises(ValueError, match=r"classWeight: classes \[12\] do not occur"):
        DecisionTreeClassifier(numWorkers=1, classWeight={0: 1.0, 12: 2.0}).fit(df)
    with pytest.raises(ValueError, match="classWeight"):
        DecisionTreeClassifier(classWeight={0: -1.0})._validate_params()


def test_forest_with_missing_values_same_any_workers(pen_nan):
    _, _, df = pen_nan
    kw = dict(numTrees=4, maxDepth=8, seed=2, oobScore=True, ccpAlpha=0.002)
    a = RandomForestClassifier(numWorkers=2, **kw).fit(df)
    b = RandomForestClassifier(numWorkers=1, **kw).fit(df.repartition(3))
    pa_, pb = a.predictor.to_arrays(), b.predictor.to_arrays()
    for k in pa_:
        np.testing.assert_array_equal(pa_[k], pb[k], err_msg=k)
    assert pa_["missing_go_to_left"].any()
    # 4 trees: a row is out of bag in ~1.5 of them (none for a quarter: class 0)
    assert a.outOfBagScore == b.outOfBagScore and a.outOfBagScore > 0.6


def test_extra_trees_any_workers_accuracy_and_save(pen, pen_nan, tmp_path):
    """ExtraTrees: the same model for any numWorkers and partitioning (draws from seed, tree,
    node); test accuracy near scikit-learn's ExtraTreesClassifier on the same rows (the
    random streams differ: compared statistically); save/load and load_model."""
    from sklearn.ensemble import ExtraTreesClassifier as SkET

    X, y, df = pen_nan
    _, _, Xt, yt, _, test = pen
    kw = dict(numTrees=12, maxDepth=64, seed=4)
    a = ExtraTreesClassifier(numWorkers=2, **kw).fit(df)
    b = ExtraTreesClassifier(numWorkers=1, **kw).fit(df.repartition(3))
    pa_, pb = a.predictor.to_arrays(), b.predictor.to_arrays()
    for k in pa_:
        np.testing.assert_array_equal(pa_[k], pb[k], err_msg=k)
    assert a.getBootstrap() is False
    acc = (a.predictor.predict(Xt) == yt).mean()
    sk = np.mean([(SkET(12, random_state=s).fit(X, y).predict(Xt) == yt).mean()
                  for s in range(3)])
    assert abs(acc - sk) < 0.03, (acc, sk)
    path = str(tmp_path / "et")
    a.save(path)
    loaded = ExtraTreesClassificationModel.load(path)
    np.testing.assert_array_equal(loaded.predictor.threshold, a.predictor.threshold)
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict(Xt[:50]),
                                  a.predictor.predict(Xt[:50]))


@pytest.fixture(scope="module")
def forest_model(pen):
    return RandomForestClassifier(numTrees=12, maxDepth=64, seed=5, numWorkers=2,
                                  oobScore=True).fit(pen[4])


def test_forest_accuracy_oob_outputs_and_importances(pen, forest_model):
    _, _, Xt, yt, _, test = pen
    out = forest_model.transform(test)
    acc = MulticlassClassificationEvaluator(metricName="accuracy").evaluate(out)
    assert acc > 0.95, acc
    assert 0.93 < forest_model.outOfBagScore < 1.0
    row = out.select("rawPrediction", "probability", "prediction").first()
    np.testing.assert_allclose(row[0].toArray() / 12, row[1].toArray(), rtol=1e-12)
    assert row[2] == float(np.argmax(row[1].toArray()))
    assert forest_model.getNumTrees == 12 and forest_model.numClasses == 10
    assert forest_model.featureImportances.toArray().sum() == pytest.approx(1.0)
    t3 = forest_model.treeArrays(3)
    inner = np.flatnonzero(t3["children_left"] >= 0)
    np.testing.assert_array_equal(t3["children_left"][inner], inner + 1)  # preorder


@pytest.mark.parametrize("nthread", [1, 3])  # 3: groups of trees grown on three threads
def test_forest_same_model_any_workers_partitioning_and_threads(pen, forest_model, nthread):
    train = pen[4]
    other = RandomForestClassifier(numTrees=12, maxDepth=64, seed=5, numWorkers=1,
                                   oobScore=True, nthread=nthread).fit(train.repartition(3))
    assert other.getNthread() == nthread
    a, b = forest_model.predictor.to_arrays(), other.predictor.to_arrays()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert other.outOfBagScore == forest_model.outOfBagScore


def test_save_load_pipeline_and_kernel_loader(pen, forest_model, tmp_path):
    train, test = pen[4], pen[5]
    path = str(tmp_path / "rf")
    forest_model.write().save(path)
    forest_model.write().overwrite().save(path)
    loaded = RandomForestClassificationModel.load(path)
    assert loaded.outOfBagScore == forest_model.outOfBagScore
    rows = forest_model.transform(test).select("features", "probability").collect()
    p1 = np.array([r[1].toArray() for r in rows])
    p2 = np.array([r[1].toArray() for r in loaded.transform(test).select(
        "features", "probability").collect()])
    np.testing.assert_array_equal(p1, p2)
    pred = sparkxml_kernels.load_model(path)
    X_rows = np.array([r[0].toArray() for r in rows])
    np.testing.assert_array_equal(pred.predict_values(X_rows), p1)
    assert pred.tree_arrays(0).node_count == forest_model.treeArrays(0)["feature"].size
    with pytest.raises(sparkxml_kernels.ModelFormatError):
        DecisionTreeClassificationModel.load(path)  # a forest is not a tree model
    pipe = Pipeline(stages=[DecisionTreeClassifier(maxDepth=4, numWorkers=1)]).fit(train)
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath)
    assert again.stages[0].treeArrays(0)["feature"].size == \
        pipe.stages[0].treeArrays(0)["feature"].size


def test_cross_validator_and_regression_forest(spark):
    from pyspark.ml.evaluation import RegressionEvaluator

    d = load_diabetes()
    df = _frame(spark, d.data, d.target)
    dt = DecisionTreeRegressor(maxDepth=3, numWorkers=1)
    grid = ParamGridBuilder().addGrid(dt.minInstancesPerNode, [1, 20]).build()
    cv = CrossValidator(estimator=dt, estimatorParamMaps=grid, numFolds=2, seed=3,
                        evaluator=RegressionEvaluator(metricName="r2")).fit(df)
    assert max(cv.avgMetrics) > 0.2
    assert cv.bestModel.treeArrays(0)["feature"].size <= 15
    m = RandomForestRegressor(numTrees=10, maxDepth=6, criterion="poisson", numWorkers=2,
                              oobScore=True, featureSubsetStrategy="0.5").fit(df)
    assert 0.2 < m.outOfBagScore < 0.7


def test_bad_input_and_params(spark):
    nan = spark.createDataFrame([(Vectors.dense([1.0, float("inf")]), 0.0),
                                 (Vectors.dense([2.0, 1.0]), 1.0)], ["features", "label"])
    with pytest.raises(ValueError, match="featuresCol: column 'features' holds the value inf; "
                                         "trees need finite or missing"):
        DecisionTreeClassifier(numWorkers=1).fit(nan)
    neg = spark.createDataFrame([(Vectors.dense([1.0]), -1.0), (Vectors.dense([2.0]), 3.0)],
                                ["features", "label"])
    with pytest.raises(ValueError, match="criterion 'poisson' needs y >= 0"):
        DecisionTreeRegressor(criterion="poisson", numWorkers=1).fit(neg)
    with pytest.raises(ValueError, match="does not apply to classification"):
        DecisionTreeClassifier(criterion="squared_error", numWorkers=1).fit(nan)
    with pytest.raises(ValueError, match="maxLeafNodes"):
        RandomForestClassifier(maxLeafNodes=10, numWorkers=1).fit(nan)
    with pytest.raises(ValueError, match="oobScore=True needs bootstrap"):
        RandomForestClassifier(oobScore=True, bootstrap=False, numWorkers=1).fit(neg)
    with pytest.raises(ValueError, match="maxBins=70000 is invalid"):
        DecisionTreeClassifier(maxBins=70000)._validate_params()
    with pytest.raises(ValueError, match="featureSubsetStrategy='half' is invalid"):
        RandomForestClassifier(featureSubsetStrategy="half")._validate_params()
    DecisionTreeClassifier(maxBins=300)._validate_params()  # trees allow wide bins
    with pytest.raises(ValueError, match="labelCol"):
        DecisionTreeClassifier(numWorkers=1, labelCol="nope").fit(neg)


def test_balanced_class_weights(spark):
    imb = spark.createDataFrame([(Vectors.dense([float(i)]), float(i < 5)) for i in range(40)],
                                ["features", "label"])
    tree = DecisionTreeClassifier(classWeight="balanced", maxDepth=1, numWorkers=1).fit(imb)
    arrays = tree.treeArrays(0)
    np.testing.assert_allclose(arrays["value"][0, 0], [0.5, 0.5])  # n / (K * count) weights
    assert arrays["weighted_n_node_samples"][0] == pytest.approx(40.0)
    assert arrays["threshold"][0] == 4.5


def test_balanced_subsample_same_any_workers_saves_and_trees_refuse_it(pen_nan, tmp_path):
    X, _, df = pen_nan
    kw = dict(numTrees=3, maxDepth=6, seed=1, classWeight="balanced_subsample")
    a = RandomForestClassifier(numWorkers=2, **kw).fit(df)
    b = RandomForestClassifier(numWorkers=1, **kw).fit(df.repartition(3))
    pa_, pb = a.predictor.to_arrays(), b.predictor.to_arrays()
    for k in pa_:
        np.testing.assert_array_equal(pa_[k], pb[k], err_msg=k)
    for t in range(3):  # each tree's classes weigh the same in its root (its own sample)
        np.testing.assert_allclose(a.treeArrays(t)["value"][0, 0], np.full(10, 0.1),
                                   rtol=1e-14)
    path = str(tmp_path / "rf_bs")
    a.save(path)
    assert RandomForestClassificationModel.load(path).getClassWeight() == "balanced_subsample"
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict_values(X[:50]),
                                  a.predictor.predict_values(X[:50]))
    with pytest.raises(ValueError, match="classWeight='balanced_subsample' is invalid"):
        DecisionTreeClassifier(classWeight="balanced_subsample")._validate_params()


def test_monotonic_constraints_tree_equals_sklearn_forest_same_any_workers(spark, pen_nan,
                                                                          tmp_path):
    d = load_diabetes()
    cst = [1, 0, 1, 1, 0, 0, -1, 0, 1, 0]
    df = _frame(spark, d.data, d.target)
    model = DecisionTreeRegressor(maxDepth=6, maxBins=512, numWorkers=2,
                                  monotonicConstraints=cst).fit(df)
    sk = SkTreeRegressor(random_state=0, max_depth=6, monotonic_cst=cst).fit(d.data, d.target)
    ours = model.treeArrays(0)
    for f in FIELDS:
        np.testing.assert_array_equal(ours[f], getattr(sk.tree_, f), err_msg=f)
    kw = dict(numTrees=3, maxDepth=8, seed=3, maxBins=512, monotonicConstraints=cst)
    a = RandomForestRegressor(numWorkers=2, **kw).fit(df)
    b = RandomForestRegressor(numWorkers=1, **kw).fit(df.repartition(3))
    pa_, pb = a.predictor.to_arrays(), b.predictor.to_arrays()
    for k in pa_:
        np.testing.assert_array_equal(pa_[k], pb[k], err_msg=k)
    path = str(tmp_path / "rf_mono")
    a.save(path)
    from sparkxml.forest.forest import RandomForestRegressionModel

    assert RandomForestRegressionModel.load(path).getMonotonicConstraints() == cst
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict(d.data[:30]),
                                  a.predictor.predict(d.data[:30]))
    with pytest.raises(ValueError, match="monotonicConstraints: 2 constraints for 10"):
        DecisionTreeRegressor(numWorkers=1, monotonicConstraints=[1, 0]).fit(df)
    with pytest.raises(ValueError, match="not supported with multiclass"):
        DecisionTreeClassifier(numWorkers=1, monotonicConstraints=[1] + [0] * 15).fit(
            pen_nan[2])
    with pytest.raises(ValueError, match="monotonicConstraints"):
        DecisionTreeRegressor(monotonicConstraints=[2, 0])._validate_params()


def test_permutation_importance_equals_sklearn_on_the_same_tree(pen_nan):
    from sklearn.inspection import permutation_importance as sk_pi

    _, _, df = pen_nan
    model = DecisionTreeClassifier(maxDepth=6, numWorkers=1).fit(df)
    rows = df.select("features", "label").collect()
    X = np.array([r[0].toArray() for r in rows])
    y = np.array([r[1] for r in rows])
    sk = SkTree(random_state=0, max_depth=6).fit(X, y)  # node for node the same tree
    got = model.permutationImportance(df, nRepeats=2, seed=3)
    ref = sk_pi(sk, X, y, n_repeats=2, random_state=3)
    np.testing.assert_array_equal(got["importances"], ref.importances)
    assert got["baseline_score"] == sk.score(X, y)
    with pytest.raises(ValueError, match="metric='auc' is invalid"):
        model.permutationImportance(df, metric="auc")
    with pytest.raises(ValueError, match="above maxRows=10"):
        model.permutationImportance(df, maxRows=10)


def test_oob_decision_function_gives_the_oob_score(pen_nan):
    _, _, df = pen_nan
    model = RandomForestClassifier(numTrees=4, maxDepth=8, seed=2, oobScore=True,
                                   numWorkers=2).fit(df)
    rows = model.oobDecisionFunction(df).select("label", "oobDecisionFunction").collect()
    y = np.array([r[0] for r in rows])
    dec = np.array([r[1].toArray() for r in rows])
    nan = np.isnan(dec).any(axis=1)
    assert 0 < nan.sum() < 0.2 * len(y)  # rows in all 4 samples: e**-4 of them
    np.testing.assert_allclose(dec[~nan].sum(axis=1), 1.0, rtol=1e-12)
    # the OOB score counts a row in every sample as class 0, as scikit-learn
    acc = np.mean(np.argmax(np.nan_to_num(dec), axis=1) == y)
    assert acc == pytest.approx(model.outOfBagScore, abs=1e-15)
