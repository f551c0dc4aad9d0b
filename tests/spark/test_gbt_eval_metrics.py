"""evalMetrics of GBTClassifier and LambdaMART on local[2]: every metric recorded per round on
the training and validation rows, the values XGBoost computes from the same margins,
``model.evaluate(df).metrics`` agreeing with the last recorded round, save/load, and metrics
that do not fit the task refused before any job."""
import numpy as np
import pandas as pd
import pytest

from sparkxml import GBTClassifier, GBTRegressor, LambdaMART
from sparkxml.gbt.estimators import GBTClassificationModel

xgb = pytest.importorskip("xgboost")

COLS = ["a", "b", "c"]
BINARY = ["logloss", "error", "auc", "aucpr", "error@0.7"]
ROUNDS = 6


def _frame(n, seed, classes):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    s = X[:, 0] + 0.5 * X[:, 1] + 0.7 * rng.normal(size=n)
    y = (s > 0).astype(float) if classes == 2 else np.digitize(s, [-0.5, 0.5]).astype(float)
    return pd.DataFrame(X, columns=COLS).assign(label=y, valid=np.arange(n) % 3 == 0)


def _xgb_eval(metrics, X, y, margin, objective, **params):
    """XGBoost's value of each metric for these margins (a model of 0 rounds started from
    them)."""
    d = xgb.DMatrix(X, label=y, base_margin=margin)
    bst = xgb.train(dict(objective=objective, eval_metric=metrics, **params), d, 0)
    out = bst.eval(d).split("\t")[1:]
    return {kv.split(":")[0][len("eval-"):]: float(kv.split(":")[1]) for kv in out}


@pytest.fixture(scope="module")
def binary(spark):
    pdf = _frame(240, 0, 2)
    model = GBTClassifier(featuresCols=COLS, maxIter=ROUNDS, maxDepth=3, stepSize=0.3,
                          numWorkers=1, validationIndicatorCol="valid",
                          evalMetrics=BINARY).fit(spark.createDataFrame(pdf))
    return pdf, model


def test_binary_metrics_recorded_and_as_xgboost(spark, binary):
    pdf, model = binary
    hist = model.summary.metricHistory
    assert list(hist) == BINARY and model.summary.metricName == "logloss"
    for m in BINARY:
        assert len(hist[m]["train"]) == len(hist[m]["validation"]) == ROUNDS
    # the last round's validation values are XGBoost's on the model's margins
    val = pdf[pdf.valid]
    raw = model.transform(spark.createDataFrame(val)).toPandas()["rawPrediction"]
    margin = np.array([r[1] for r in raw])
    ref = _xgb_eval(BINARY, val[COLS].to_numpy(), val["label"].to_numpy(), margin,
                    "binary:logistic")
    for m in BINARY:
        # auc / aucpr: 65536 probability buckets (exact when no two scores share one)
        tol = 1e-4 if m.startswith("auc") else 1e-6
        assert hist[m]["validation"][-1] == pytest.approx(ref[m], abs=tol), m


def test_binary_evaluate_reports_every_metric(spark, binary, tmp_path):
    pdf, model = binary
    val = spark.createDataFrame(pdf[pdf.valid])
    ev = model.evaluate(val)
    assert list(ev.metrics) == ["logloss", "error", "auc", "aucpr", "error@0.7"]
    for m, v in ev.metrics.items():
        assert v == pytest.approx(model.summary.metricHistory[m]["validation"][-1],
                                  rel=1e-9), m
    assert ev.metrics["logloss"] == pytest.approx(ev.logLoss, rel=1e-9)
    assert ev.metrics["auc"] == pytest.approx(ev.areaUnderROC, abs=1e-4)
    assert ev.metrics["error"] == pytest.approx(1 - ev.accuracy, abs=1e-12)
    assert list(model.evaluate(val, metrics=["aucpr"]).metrics) == ["aucpr"]
    with pytest.raises(ValueError, match="'merror' does not apply to 2 classes"):
        model.evaluate(val, metrics=["merror"])
    path = str(tmp_path / "m")
    model.write().save(path)
    loaded = GBTClassificationModel.load(path)
    assert loaded.summary.metricHistory == model.summary.metricHistory


def test_multiclass_metrics_and_early_stopping_metric(spark):
    pdf = _frame(240, 1, 3)
    model = GBTClassifier(featuresCols=COLS, maxIter=ROUNDS, maxDepth=3, stepSize=0.3,
                          numWorkers=1, validationIndicatorCol="valid",
                          evalMetrics=["merror", "mlogloss"]).fit(spark.createDataFrame(pdf))
    hist = model.summary.metricHistory
    assert model.summary.metricName == "merror"  # early stopping follows the first
    val = pdf[pdf.valid]
    raw = model.transform(spark.createDataFrame(val)).toPandas()["rawPrediction"]
    ref = _xgb_eval(["merror", "mlogloss"], val[COLS].to_numpy(), val["label"].to_numpy(),
                    np.stack([r.toArray() for r in raw]), "multi:softprob", num_class=3)
    for m in ("merror", "mlogloss"):
        assert hist[m]["validation"][-1] == pytest.approx(ref[m], abs=1e-6), m
    ev = model.evaluate(spark.createDataFrame(val))
    assert set(ev.metrics) == {"mlogloss", "merror"}
    assert ev.metrics["merror"] == pytest.approx(1 - ev.accuracy, abs=1e-12)


@pytest.mark.parametrize("kwargs,match", [
    (dict(evalMetrics=["rmse"]), "'rmse' does not apply to 2 classes"),
    (dict(evalMetrics=["auc", "auc"]), "names a metric twice"),
    (dict(evalMetric="merror"), "'merror' does not apply to 2 classes"),
])
def test_classifier_refuses_metrics_of_other_tasks(spark, kwargs, match):
    df = spark.createDataFrame(_frame(20, 2, 2))
    with pytest.raises(ValueError, match=match):
        GBTClassifier(featuresCols=COLS, maxIter=2, **kwargs).fit(df)


def test_classifier_evalmetrics_param_checked():
    for bad in (["nope"], ["error@1.5"], []):
        with pytest.raises(ValueError, match=r"param evalMetrics=.* is invalid"):
            GBTClassifier(evalMetrics=bad)._validate_params()


def test_regressor_evaluate_reports_its_metrics(spark):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 3))
    pdf = pd.DataFrame(X, columns=COLS).assign(label=rng.poisson(np.exp(0.5 * X[:, 0])))
    df = spark.createDataFrame(pdf)
    model = GBTRegressor(featuresCols=COLS, objective="poisson", maxIter=4, maxDepth=2,
                         numWorkers=1, evalMetrics=["gamma-deviance", "poisson-nloglik"]).fit(df)
    ev = model.evaluate(df)  # the training rows: the last recorded training values
    assert list(ev.metrics) == ["poisson-nloglik", "gamma-deviance"]
    for m, v in ev.metrics.items():
        assert v == pytest.approx(model.summary.metricHistory[m]["train"][-1], rel=1e-9), m
    with pytest.raises(ValueError, match="'rmse' does not apply to objective 'poisson'"):
        model.evaluate(df, metrics=["rmse"])


def _ranking(n_queries=24, seed=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 12, size=n_queries)
    qid = np.repeat(np.arange(n_queries), sizes)
    X = rng.normal(size=(qid.size, 3))
    rel = (X[:, 0] + 0.5 * rng.normal(size=qid.size) > 0.3).astype(float)  # binary: map
    return pd.DataFrame(X, columns=COLS).assign(qid=qid, label=rel, valid=qid % 3 == 0)


def test_lambdamart_metrics_recorded_and_evaluate(spark):
    pdf = _ranking()
    names = ["map@5", "ndcg@3"]
    model = LambdaMART(featuresCols=COLS, groupCol="qid", maxIter=ROUNDS, maxDepth=3,
                       numWorkers=2, validationIndicatorCol="valid",
                       evalMetrics=names).fit(spark.createDataFrame(pdf))
    hist = model.summary.metricHistory
    assert list(hist) == names and model.summary.metricName == "map@5"
    assert all(len(hist[m]["validation"]) == ROUNDS for m in names)
    val = pdf[pdf.valid]
    ev = model.evaluate(spark.createDataFrame(val))
    assert ev.numQueries == val.qid.nunique()
    assert list(ev.metrics) == ["ndcg@10", "map@10"] + names
    for m in names:
        assert ev.metrics[m] == pytest.approx(hist[m]["validation"][-1], rel=1e-9), m
    # (the metrics themselves against XGBoost's: tests/kernels/test_gbt_eval_metrics_xgb.py;
    # here many documents of a query tie in score, which XGBoost orders differently)


def test_lambdamart_refuses_non_ranking_metrics(spark):
    with pytest.raises(ValueError, match="evalMetric='auc'"):
        LambdaMART(evalMetrics=["auc"]).fit(spark.createDataFrame(_ranking(4)))
