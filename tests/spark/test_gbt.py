"""GBTClassifier / GBTRegressor on local[2]: accuracy, determinism, persistence, early
stopping, Pipelines and tuning, bad input."""

import numpy as np
import pandas as pd
import pytest
from _data import data_path
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.evaluation import BinaryClassificationEvaluator, RegressionEvaluator
from pyspark.ml.feature import VectorAssembler
from pyspark.ml.linalg import Vectors
from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

import sparkxml_kernels
from sparkxml import GBTClassifier, GBTRegressor
from sparkxml.gbt.estimators import GBTClassificationModel, GBTRegressionModel
from sparkxml_kernels.gbt.metrics import auc_exact

FCOLS = [f"f{i}" for i in range(1, 29)]


def _read(name):
    a = np.loadtxt(data_path("lightgbm_binary", name))
    pdf = pd.DataFrame(a[:, 1:], columns=FCOLS)
    pdf.insert(0, "label", a[:, 0])
    return pdf


@pytest.fixture(scope="module")
def binary(spark):
    tr, te = _read("binary.train"), _read("binary.test")
    va = VectorAssembler(inputCols=FCOLS, outputCol="features")
    train = va.transform(spark.createDataFrame(tr)).cache()
    test = va.transform(spark.createDataFrame(te)).cache()
    train.count(), test.count()
    return train, test, tr, te


BIN_PARAMS = dict(maxIter=100, maxDepth=6, stepSize=0.1, maxBins=256, regLambda=1.0, seed=3)


@pytest.fixture(scope="module")
def binary_model(binary):
    return GBTClassifier(numWorkers=2, **BIN_PARAMS).fit(binary[0])


def _probs(model, df):
    rows = model.transform(df).select("probability").collect()
    return np.array([r[0][1] for r in rows])


def test_lightgbm_binary_auc(binary, binary_model):
    _, test, _, te = binary
    p = _probs(binary_model, test)
    auc = auc_exact(te["label"].to_numpy(), p)
    assert auc >= 0.82, auc
    assert binary_model.getNumTrees == 100
    assert binary_model.numFeatures == 28 and binary_model.numClasses == 2
    imp = binary_model.featureImportances
    assert imp.size == 28 and abs(imp.toArray().sum() - 1) < 1e-9
    assert int(np.argmax(imp.toArray())) in (24, 25, 26, 27)  # m_bb, m_wwbb... dominate
    info = binary_model.summary.workerInfo
    assert [i["rank"] for i in info] == [0, 1] and sum(i["n_train"] for i in info) == 7000
    # evaluators see Spark ML's column types
    ev = BinaryClassificationEvaluator(metricName="areaUnderROC")
    assert abs(ev.evaluate(binary_model.transform(test)) - auc) < 1e-6


def test_same_model_1_and_2_workers(binary, binary_model):
    _, test, _, _ = binary
    one = GBTClassifier(numWorkers=1, **BIN_PARAMS).fit(binary[0])
    assert one.summary.workerInfo[0]["world_size"] == 1
    np.testing.assert_allclose(_probs(one, test), _probs(binary_model, test), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(one.predictor.feature, binary_model.predictor.feature)


def test_save_load_pipeline_and_kernel_loader(binary, binary_model, tmp_path):
    _, test, _, te = binary
    want = _probs(binary_model, test)
    path = str(tmp_path / "gbt")
    binary_model.write().save(path)
    binary_model.write().overwrite().save(path)
    loaded = GBTClassificationModel.load(path)
    np.testing.assert_array_equal(_probs(loaded, test), want)
    assert loaded.getNumTrees == 100 and loaded.uid == binary_model.uid
    # served without Spark: raw features in, same scores out
    pred = sparkxml_kernels.load_model(path)
    p = pred.predict_proba(te[FCOLS].to_numpy())[:, 1]
    np.testing.assert_allclose(p, want, rtol=0, atol=1e-12)
    with pytest.raises(ValueError):
        GBTRegressionModel.load(path)

    pipe = Pipeline(stages=[VectorAssembler(inputCols=FCOLS, outputCol="features"),
                            GBTClassifier(maxIter=5, numWorkers=2)])
    raw_train = binary[0].drop("features")
    pm = pipe.fit(raw_train)
    ppath = str(tmp_path / "pipe")
    pm.write().save(ppath)
    again = PipelineModel.load(ppath)
    a = pm.transform(test.drop("features")).select("probability").collect()
    b = again.transform(test.drop("features")).select("probability").collect()
    assert a == b


def _synthetic_regression(n=3000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 3 * X[:, 0] + np.where(X[:, 1] > 0, 2.0, -1.0) + X[:, 2] * X[:, 3] + \
        0.1 * rng.normal(size=n)
    X[rng.random((n, d)) < 0.05] = np.nan  # missing values
    pdf = pd.DataFrame(X, columns=[f"x{i}" for i in range(d)])
    pdf["label"] = y
    pdf["w"] = rng.uniform(0.5, 2.0, size=n)
    pdf["valid"] = rng.random(n) < 0.2
    return pdf


@pytest.fixture(scope="module")
def regression(spark):
    pdf = _synthetic_regression()
    return spark.createDataFrame(pdf).repartition(3).cache(), pdf


def test_regression_feature_columns_weights_and_early_stopping(regression):
    df, pdf = regression
    cols = [c for c in pdf.columns if c.startswith("x")]
    est = GBTRegressor(featuresCols=cols, weightCol="w", validationIndicatorCol="valid",
                       maxIter=400, stepSize=0.5, maxDepth=4, earlyStoppingRounds=5,
                       numWorkers=2, seed=1)
    model = est.fit(df)
    s = model.summary
    assert s.metricName == "rmse"
    assert s.roundsRun < 400 and s.numRounds == s.bestIteration + 1
    assert model.getNumTrees == s.numRounds
    assert len(s.validationHistory) == s.roundsRun
    assert s.bestScore == pytest.approx(min(s.validationHistory))
    out = model.transform(df.filter("valid"))
    rmse = RegressionEvaluator().evaluate(out)
    assert rmse < 0.5 * pdf["label"].std(), rmse
    assert out.schema["prediction"].dataType.simpleString() == "double"
    # numWorkers unset: small data trains on one worker
    assert len(GBTRegressor(featuresCols=cols, maxIter=3).fit(df).summary.workerInfo) == 1


def test_multiclass_and_empty_partitions(spark):
    rng = np.random.default_rng(4)
    n = 900
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0).astype(int)  # 0, 1, 2
    rows = [(Vectors.sparse(3, {j: float(X[i, j]) for j in range(3) if X[i, j] > -1}),
             float(y[i])) for i in range(n)]
    df = spark.createDataFrame(rows, ["features", "label"])
    model = GBTClassifier(maxIter=20, maxDepth=3, numWorkers=2, stepSize=0.3).fit(df)
    assert model.numClasses == 3 and model.getNumTrees == 60
    assert model.summary.metricName is None or model.summary.metricName == "mlogloss"
    out = model.transform(df).select("label", "prediction", "probability",
                                     "rawPrediction").collect()
    probs = np.array([r.probability.toArray() for r in out])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-12)
    acc = np.mean([r.label == r.prediction for r in out])
    assert acc > 0.85, acc
    assert len(out[0].rawPrediction) == 3
    # one row on two workers: one task has no rows, training must still work
    one = spark.createDataFrame([(Vectors.dense([0.0, 1.0]), 1.0)], ["features", "label"])
    tm = GBTClassifier(maxIter=2, numWorkers=2).fit(one)
    assert tm.getNumTrees == 2
    assert sorted(i["n_train"] for i in tm.summary.workerInfo) == [0, 1]
    assert tm.transform(one).select("prediction").first()[0] == 1.0


def test_cross_validator(regression):
    df, pdf = regression
    cols = [c for c in pdf.columns if c.startswith("x")]
    small = df.limit(600)
    est = GBTRegressor(featuresCols=cols, maxIter=10, numWorkers=1)
    grid = ParamGridBuilder().addGrid(est.maxDepth, [1, 4]).build()
    cv = CrossValidator(estimator=est, estimatorParamMaps=grid, evaluator=RegressionEvaluator(),
                        numFolds=2, seed=0)
    cvm = cv.fit(small)
    assert cvm.avgMetrics[1] < cvm.avgMetrics[0]  # depth 4 beats stumps
    assert cvm.bestModel.getMaxDepth() == 4


# ------------------------------------------------------------------------------ bad input
def _err(spark, rows, schema, **kw):
    df = spark.createDataFrame(rows, schema)
    return kw.pop("est", GBTClassifier)(maxIter=2, numWorkers=1, **kw).fit(df)


def test_bad_labels_weights_and_vectors(spark):
    v = Vectors.dense
    with pytest.raises(ValueError, match=r"labelCol: column 'label' holds the non-finite "
                                         r"value nan"):
        _err(spark, [(v([1.0]), float("nan")), (v([2.0]), 1.0)], ["features", "label"])
    with pytest.raises(ValueError, match=r"labelCol: column 'label' holds the non-finite "
                                         r"value inf"):
        _err(spark, [(v([1.0]), float("inf")), (v([2.0]), 1.0)], ["features", "label"],
             est=GBTRegressor)
    with pytest.raises(ValueError, match=r"label 2.0, outside 0..1"):
        _err(spark, [(v([1.0]), 2.0), (v([2.0]), 1.0)], ["features", "label"], numClasses=2)
    with pytest.raises(ValueError, match=r"holds the value 0.5; class labels"):
        _err(spark, [(v([1.0]), 0.5), (v([2.0]), 1.0)], ["features", "label"])
    with pytest.raises(ValueError, match=r"holds the value -1.0; class labels"):
        _err(spark, [(v([1.0]), -1.0), (v([2.0]), 1.0)], ["features", "label"])
    with pytest.raises(ValueError, match=r"weightCol: column 'w' holds the value -2.0"):
        _err(spark, [(v([1.0]), 0.0, 1.0), (v([2.0]), 1.0, -2.0)],
             ["features", "label", "w"], weightCol="w")
    with pytest.raises(ValueError, match=r"vector of size 3, expected 2|different sizes"):
        _err(spark, [(v([1.0, 2.0]), 0.0), (v([2.0, 1.0, 0.0]), 1.0)], ["features", "label"])
    with pytest.raises(ValueError, match=r"labelCol: column 'nope' is not in the DataFrame"):
        _err(spark, [(v([1.0]), 0.0)], ["features", "label"], labelCol="nope")
    with pytest.raises(TypeError, match=r"featuresCol: column 'features' must be a Spark ML "
                                        r"vector"):
        _err(spark, [(1.0, 0.0)], ["features", "label"])
    with pytest.raises(ValueError, match=r"evalMetric 'rmse' does not apply to 2 classes"):
        _err(spark, [(v([1.0]), 0.0), (v([2.0]), 1.0)], ["features", "label"],
             evalMetric="rmse")
    with pytest.raises(ValueError, match=r"earlyStoppingRounds > 0 needs "
                                         r"validationIndicatorCol"):
        _err(spark, [(v([1.0]), 0.0), (v([2.0]), 1.0)], ["features", "label"],
             earlyStoppingRounds=3)


def test_param_rules():
    with pytest.raises(ValueError, match="maxBins=70000 is invalid"):  # uint16 bins: <= 65536
        GBTClassifier(maxBins=70000)._validate_params()
    with pytest.raises(ValueError, match="growPolicy='best' is invalid"):
        GBTRegressor(growPolicy="best")._validate_params()
    with pytest.raises(ValueError, match="subsamplingRate=0.0 is invalid"):
        GBTRegressor(subsamplingRate=0.0)._validate_params()
    with pytest.raises(ValueError, match="timeoutSeconds=0.0 is invalid"):
        GBTRegressor(timeoutSeconds=0.0)._validate_params()
    est = GBTClassifier().setMaxDepth(3).setNumWorkers(2).setGrowPolicy("lossguide")
    assert (est.getMaxDepth(), est.getNumWorkers(), est.getGrowPolicy()) == (3, 2, "lossguide")


def test_repartition_only_when_needed():
    from sparkxml._core.workers import needs_repartition

    assert not needs_repartition([{"n": 100}, {"n": 110}], 2)
    assert needs_repartition([{"n": 100}, {"n": 110}], 3)  # other partition count
    assert needs_repartition([{"n": 10}, {"n": 200}], 2)  # unbalanced
    assert needs_repartition([{"n": 0}, {"n": 200}], 2)  # an empty partition


def test_too_many_workers_fails_fast(spark):
    df = spark.createDataFrame([(Vectors.dense([1.0]), 0.0)], ["features", "label"])
    with pytest.raises(ValueError, match="numWorkers=3 exceeds the 2 task slots"):
        GBTClassifier(numWorkers=3).fit(df)
