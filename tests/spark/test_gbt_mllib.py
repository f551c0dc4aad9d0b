"""GBT models as Spark MLlib's: evaluate() against pyspark.ml's evaluators,
evaluateEachIteration, one-vector predictions and thresholds, leafCol, SHAP contributions,
trees and dumps with feature names; XGBoost parity through Spark (base margins, missing,
monotone constraints, continued training); params and kwargs."""
import json

import numpy as np
import pandas as pd
import pytest
from pyspark.ml.evaluation import (
    BinaryClassificationEvaluator,
    MulticlassClassificationEvaluator,
    RegressionEvaluator,
)
from pyspark.ml.feature import VectorAssembler
from pyspark.sql import functions as F

import sparkxml_kernels
from sparkxml import FastXML, GBTClassifier, GBTRegressor, LambdaMART, XMLEvaluator
from sparkxml.gbt.estimators import GBTClassificationModel

COLS = ["age", "income", "score", "noise"]


def _frame(seed, n=1200):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    pdf = pd.DataFrame(X, columns=COLS)
    z = X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=n)
    pdf["label"] = (z > 0).astype(float)
    pdf["k3"] = np.digitize(z, [-0.7, 0.7]).astype(float)
    pdf["y"] = 2 * X[:, 0] - X[:, 1] + np.sin(2 * X[:, 2]) + 0.1 * rng.normal(size=n)
    pdf["w"] = rng.uniform(0.5, 2.0, n)
    pdf["m"] = 0.5 * np.cos(X[:, 3])
    return pdf


@pytest.fixture(scope="module")
def data(spark):
    pdf = _frame(0)
    va = VectorAssembler(inputCols=COLS, outputCol="features")
    return va.transform(spark.createDataFrame(pdf)).cache(), pdf


@pytest.fixture(scope="module")
def clf(data):
    df, _ = data
    return GBTClassifier(maxIter=8, maxDepth=3, stepSize=0.3, weightCol="w", numWorkers=1,
                         predContribCol="shap", leafCol="leaves").fit(df)


def test_evaluate_equals_mllib_evaluators(data, clf):
    df, _ = data
    ev = clf.evaluate(df)
    out = ev.predictions.cache()
    assert "shap" not in out.columns  # evaluate() skips the SHAP and leaf outputs
    mc = MulticlassClassificationEvaluator(weightCol="w")
    for name, ours in (("accuracy", ev.accuracy), ("weightedPrecision", ev.weightedPrecision),
                       ("f1", ev.weightedFMeasure()),
                       ("weightedFalsePositiveRate", ev.weightedFalsePositiveRate),
                       ("logLoss", ev.logLoss)):
        assert ours == pytest.approx(mc.evaluate(out, {mc.metricName: name}), rel=1e-9), name
    for name, ours in (("truePositiveRateByLabel", ev.truePositiveRateByLabel),
                       ("precisionByLabel", ev.precisionByLabel)):
        theirs = mc.evaluate(out, {mc.metricName: name, mc.metricLabel: 1.0})
        assert ours[1] == pytest.approx(theirs, rel=1e-9), name
    auc = BinaryClassificationEvaluator(weightCol="w", numBins=0).evaluate(out)
    assert ev.areaUnderROC == pytest.approx(auc, rel=1e-9) and ev.areaUnderROC > 0.8
    roc = np.array(ev.roc.collect())
    assert tuple(roc[0]) == (0.0, 0.0) and tuple(roc[-1]) == (1.0, 1.0)
    assert np.sum(np.diff(roc[:, 0]) * (roc[1:, 1] + roc[:-1, 1]) / 2) == pytest.approx(auc)
    pr = np.array(ev.pr.collect())
    assert pr[0, 0] == 0.0 and pr[-1, 0] == pytest.approx(1.0)


def test_multiclass_and_regression_evaluate(data):
    df, _ = data
    m = GBTClassifier(labelCol="k3", maxIter=5, maxDepth=3, numWorkers=1,
                      predContribCol="c").fit(df)
    ev = m.evaluate(df)
    mc = MulticlassClassificationEvaluator(labelCol="k3")
    assert ev.labels == [0.0, 1.0, 2.0]
    for name, ours in (("accuracy", ev.accuracy), ("f1", ev.weightedFMeasure()),
                       ("logLoss", ev.logLoss)):
        assert ours == pytest.approx(mc.evaluate(ev.predictions, {mc.metricName: name}),
                                     rel=1e-9)
    with pytest.raises(AttributeError, match="two classes"):
        ev.roc
    each = m.evaluateEachIteration(df)
    assert len(each) == 5 and each[-1] == pytest.approx(ev.logLoss, rel=1e-9)
    row = m.transform(df).first()  # SHAP per class
    assert len(row.c) == 3 and all(len(c) == 5 for c in row.c)
    np.testing.assert_allclose([sum(c) for c in row.c], row.rawPrediction.toArray())

    r = GBTRegressor(featuresCols=COLS, labelCol="y", weightCol="w", maxIter=6,
                     numWorkers=1).fit(df)
    rev = r.evaluate(df)
    re = RegressionEvaluator(labelCol="y", weightCol="w")
    out = rev.predictions.cache()
    for name, ours in (("rmse", rev.rootMeanSquaredError), ("mae", rev.meanAbsoluteError),
                       ("var", rev.explainedVariance)):
        assert ours == pytest.approx(re.evaluate(out, {re.metricName: name}), rel=1e-9), name
    # r2: MLlib's equals ours without weights (with weights MLlib rescales SST)
    unweighted = r.copy()
    unweighted.clear(unweighted.weightCol)
    assert unweighted.evaluate(df).r2 == pytest.approx(
        RegressionEvaluator(labelCol="y", metricName="r2").evaluate(out), rel=1e-9)
    each = r.evaluateEachIteration(df)  # MLlib's squared error: the (weighted) MSE
    assert each[-1] == pytest.approx(rev.meanSquaredError, rel=1e-9)
    assert all(a > b for a, b in zip(each, each[1:]))


def test_evaluate_each_iteration_and_single_vectors(data, clf):
    df, pdf = data
    each = clf.evaluateEachIteration(df)
    pred = clf.predictor
    X, y, w = pdf[COLS].to_numpy(), pdf["label"].to_numpy(), pdf["w"].to_numpy()
    for r in (1, 4, 8):
        p = 1 / (1 + np.exp(-pred.truncate(r).predict_raw(X)))
        ll = -np.sum(w * (y * np.log(p) + (1 - y) * np.log(1 - p))) / w.sum()
        assert each[r - 1] == pytest.approx(ll, rel=1e-9)
    rows = clf.transform(df).limit(20).collect()
    for row in rows:
        assert clf.predict(row.features) == row.prediction
        np.testing.assert_allclose(clf.predictRaw(row.features).toArray(),
                                   row.rawPrediction.toArray(), rtol=1e-12)
        np.testing.assert_allclose(clf.predictProbability(row.features).toArray(),
                                   row.probability.toArray(), rtol=1e-12)
    with pytest.raises(ValueError, match="has 3 features; the model was trained on 4"):
        clf.predict([1.0, 2.0, 3.0])
    # thresholds: the class maximising p / t, as Spark ML
    t = clf.copy().setThresholds([0.2, 0.8])
    probs = np.array([r.probability.toArray() for r in rows])
    want = np.argmax(probs / [0.2, 0.8], axis=1)
    got = [r.prediction for r in t.transform(df).limit(20).collect()]
    np.testing.assert_array_equal(got, want)
    assert [t.predict(r.features) for r in rows] == list(want)
    with pytest.raises(ValueError, match="thresholds has 3 values"):
        clf.copy().setThresholds([0.2, 0.3, 0.5]).transform(df).collect()


def test_leaf_and_contribution_columns(data, clf):
    df, pdf = data
    rows = clf.transform(df).limit(50).collect()
    X = pdf[COLS].to_numpy()[:50]
    pred = clf.predictor
    leaves = pred.predict_leaf(X) + pred.tree_offsets[:-1]
    np.testing.assert_array_equal(np.array([r.leaves.toArray() for r in rows]),
                                  pred.leaf_ordinals()[leaves])
    shap = np.array([r.shap for r in rows])
    assert shap.shape == (50, 5)
    np.testing.assert_allclose(shap.sum(1), [r.rawPrediction[1] for r in rows], rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(shap, pred.predict_contributions(X), rtol=1e-12, atol=1e-12)


def test_trees_dumps_and_feature_names(data, clf, tmp_path):
    df, _ = data
    assert clf.featureNames == COLS  # from VectorAssembler's metadata
    trees = clf.trees
    assert len(trees) == clf.getNumTrees == 8 and trees[0].depth <= 3
    assert set(trees[0].arrays) >= {"feature", "threshold", "left", "right", "value", "cover"}
    text = clf.toDebugString
    assert text.startswith(f"GBTClassificationModel: uid={clf.uid}, numTrees=8, numClasses=2")
    assert "If (feature 0 (age) <= " in text and text == clf.dump("text")
    doc = json.loads(clf.dump("json"))
    assert doc["feature_names"] == COLS and len(doc["trees"]) == 8
    imp = clf.getFeatureImportances("gain")
    assert max(imp, key=imp.get) in ("age", "income", "score")
    path = str(tmp_path / "m")
    clf.write().save(path)
    back = GBTClassificationModel.load(path)
    assert back.featureNames == COLS and back.getPredContribCol() == "shap"
    assert back.summary.trainingHistory == pytest.approx(clf.summary.trainingHistory)
    assert sparkxml_kernels.load_model(path).feature_names == COLS
    cols = GBTRegressor(featuresCols=COLS[:2], labelCol="y", maxIter=2, numWorkers=1).fit(df)
    assert cols.featureNames == COLS[:2]


def test_base_margin_missing_and_monotone_constraints(data):
    df, pdf = data
    est = dict(featuresCols=COLS, labelCol="y", maxIter=4, maxDepth=3, numWorkers=1, seed=4)
    m = GBTRegressor(baseMarginCol="m", **est).fit(df)
    rows = m.transform(df).select("prediction").collect()
    X = pdf[COLS].to_numpy()
    np.testing.assert_allclose([r[0] for r in rows],
                               m.predictor.predict_raw(X, base_margin=pdf["m"].to_numpy()),
                               rtol=1e-12, atol=1e-12)
    plain = GBTRegressor(**est).fit(df)
    assert np.abs(m.predictor.value - plain.predictor.value).max() > 1e-3
    with pytest.raises(ValueError, match="baseMarginCol: column 'm' is not in the DataFrame"):
        m.transform(df.drop("m")).collect()
    # a sentinel value read as missing gives the model of the same data with NaN
    sentinel = df.withColumn("age", F.when(F.col("income") > 1.0, -999.0)
                             .otherwise(F.col("age")))
    as_nan = df.withColumn("age", F.when(F.col("income") > 1.0, float("nan"))
                           .otherwise(F.col("age")))
    a = GBTRegressor(missing=-999.0, **est).fit(sentinel)
    b = GBTRegressor(**est).fit(as_nan)
    np.testing.assert_array_equal(a.predictor.threshold, b.predictor.threshold)
    pa_ = [r[0] for r in a.transform(sentinel).select("prediction").collect()]
    pb_ = [r[0] for r in b.transform(as_nan).select("prediction").collect()]
    np.testing.assert_allclose(pa_, pb_, rtol=0, atol=1e-12)
    # monotone: increasing in age, decreasing in income, whatever the other features
    mono = GBTRegressor(monotoneConstraints=[1, -1], **est).fit(df)
    grid = np.linspace(-3, 3, 41)
    for base in np.random.default_rng(1).normal(size=(5, 4)):
        for f, sign in ((0, 1), (1, -1)):
            xs = np.tile(base, (grid.size, 1))
            xs[:, f] = grid
            p = [mono.predict(x) for x in xs]
            assert np.all(sign * np.diff(p) >= -1e-12)
    with pytest.raises(ValueError, match="monotoneConstraints: monotoneConstraints has 5"):
        GBTRegressor(monotoneConstraints=[1, 0, 0, 0, 1], **est).fit(df)


def test_continued_training_equals_one_longer_fit(data, tmp_path):
    df, _ = data
    est = dict(maxDepth=3, stepSize=0.3, numWorkers=1, seed=2)
    whole = GBTClassifier(maxIter=10, **est).fit(df)
    first = GBTClassifier(maxIter=6, **est).fit(df)
    path = str(tmp_path / "first")
    first.write().save(path)
    for init in (first, path):
        more = GBTClassifier(maxIter=4, initModel=init, **est).fit(df)
        assert more.getNumTrees == 10 and len(more.summary.trainingHistory) == 4
        np.testing.assert_array_equal(more.predictor.threshold, whole.predictor.threshold)
        np.testing.assert_allclose(more.predictor.value, whole.predictor.value, rtol=0,
                                   atol=1e-12)
    with pytest.raises(ValueError, match="initModel: the model has 4 features, objective "
                                         "'logistic' and 1 output"):
        GBTClassifier(labelCol="k3", maxIter=2, initModel=first, numWorkers=1).fit(df)
    with pytest.raises(TypeError, match="param initModel holds a GBTClassificationModel"):
        GBTClassifier(initModel=first).write().save(str(tmp_path / "est"))


def test_scale_pos_weight_through_spark(data):
    df, _ = data
    est = dict(maxIter=4, maxDepth=3, numWorkers=1)
    plain = GBTClassifier(**est).fit(df)
    heavy = GBTClassifier(scalePosWeight=5.0, **est).fit(df)
    share = [m.transform(df).agg(F.avg("prediction")).first()[0] for m in (plain, heavy)]
    assert share[1] > share[0] + 0.05  # positives weigh more: more rows predicted positive
    with pytest.raises(ValueError, match="scalePosWeight applies to two classes"):
        GBTClassifier(labelCol="k3", scalePosWeight=2.0, **est).fit(df)


def test_ranking_output_for_mllib_ranking_evaluator(spark):
    from pyspark.ml.evaluation import RankingEvaluator as MLlibRanking

    from sparkxml import RankingEvaluator

    rng = np.random.default_rng(3)
    n = 900
    X = rng.normal(size=(n, 3))
    rel = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=n) + 0.5), 0, 3)
    pdf = pd.DataFrame(X, columns=["a", "b", "c"])
    pdf["label"], pdf["qid"] = rel, rng.integers(0, 60, n)
    df = spark.createDataFrame(pdf)
    model = LambdaMART(featuresCols=["a", "b", "c"], maxIter=5, maxDepth=3,
                       numWorkers=1).fit(df)
    frame = model.rankingEvaluationFrame(df)
    assert frame.schema["prediction"].dataType.simpleString() == "array<double>"
    assert frame.count() == 60
    for k in (1, 5):
        theirs = MLlibRanking(metricName="precisionAtK", k=k).evaluate(frame)
        ours = RankingEvaluator(metricName="precisionAtK", k=k).evaluate(model.transform(df))
        assert theirs == pytest.approx(ours, rel=1e-12), k


def test_params_docs_and_unknown_kwargs():
    lm = LambdaMART()
    assert "ndcg@k" in lm.explainParam("evalMetric") and "rmse" not in \
        lm.explainParam("evalMetric")
    assert "(>= 1)" in lm.explainParam("maxIter")
    assert "(0, 1]" in lm.explainParam("stepSize")
    for make in (lambda: GBTClassifier(maxIters=3), lambda: LambdaMART(foo=1),
                 lambda: FastXML(nuMTrees=3), lambda: XMLEvaluator(kk=1),
                 lambda: GBTRegressor().setParams(depth=3),
                 lambda: FastXML().setParams(trees=3)):
        with pytest.raises(TypeError, match=r"got unknown param\(s\) '\w+'; its params are"):
            make()
    with pytest.raises(ValueError, match="thresholds=\\[0.0, 0.0\\] is invalid"):
        GBTClassifier(thresholds=[0.0, 0.0])._validate_params()
    with pytest.raises(ValueError, match="verbose=-1 is invalid"):
        GBTClassifier(verbose=-1)._validate_params()
