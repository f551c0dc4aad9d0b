"""GBTRegressor's objectives on local[2]: fit, transform on the response scale with the
margin kept, save/load, the kernel loader, agreement with XGBoost, the same model on one and
two workers, and bad input refused before training."""
import numpy as np
import pandas as pd
import pytest
from _objective_data import regression_case
from pyspark.ml import Pipeline, PipelineModel

import sparkxml_kernels
from sparkxml import GBTRegressor
from sparkxml.gbt.estimators import GBTRegressionModel

xgb = pytest.importorskip("xgboost")

COLS = ["a", "b", "c", "d"]
PARAMS = dict(featuresCols=COLS, maxIter=15, maxDepth=3, stepSize=0.3, seed=1)

# objective, its params, the XGBoost objective and params
CASES = [
    ("squared_error", {}, "reg:squarederror", {}),
    ("absolute_error", {}, "reg:absoluteerror", {}),
    ("quantile", {"quantileAlpha": 0.8}, "reg:quantileerror", {"quantile_alpha": 0.8}),
    ("poisson", {}, "count:poisson", {}),
    ("tweedie", {"tweedieVariancePower": 1.4}, "reg:tweedie", {"tweedie_variance_power": 1.4}),
    ("gamma", {}, "reg:gamma", {}),
    ("cox", {}, "survival:cox", {}),
]


def _data(objective, n=800, seed=0):
    X, y = regression_case(objective, np.random.default_rng(seed), n)
    return pd.DataFrame(X, columns=COLS).assign(label=y)


@pytest.mark.parametrize("objective,params,xgb_objective,xgb_params", CASES)
def test_objective_fit_save_load_and_xgboost(spark, tmp_path, objective, params,
                                             xgb_objective, xgb_params):
    pdf = _data(objective)
    df = spark.createDataFrame(pdf)
    model = GBTRegressor(objective=objective, numWorkers=2, **PARAMS, **params).fit(df)
    out = model.transform(df).toPandas()
    log_link = objective in ("poisson", "tweedie", "gamma", "cox")
    assert ("rawPrediction" in out.columns) == log_link
    if log_link:  # the prediction is exp(margin), the margin is kept
        np.testing.assert_allclose(out["prediction"], np.exp(out["rawPrediction"]), rtol=1e-12)
    # XGBoost with the same rounds, depth, learning rate and bins (no weights: both take the
    # interpolated quantile for the absolute/quantile leaves); its trees are float32, hence
    # 1e-4
    bst = xgb.train(dict(objective=xgb_objective, max_depth=3, eta=0.3, tree_method="hist",
                         nthread=1, **xgb_params),
                    xgb.DMatrix(pdf[COLS].to_numpy(), label=pdf["label"].to_numpy()),
                    num_boost_round=15)
    np.testing.assert_allclose(out["prediction"], bst.predict(xgb.DMatrix(pdf[COLS].to_numpy())),
                               rtol=1e-4, atol=1e-5)
    # one row, the saved model, the kernel loader: the same predictions
    row = pdf[COLS].iloc[3].to_numpy()
    assert model.predict(row) == pytest.approx(out["prediction"].iloc[3], rel=1e-12)
    path = str(tmp_path / objective)
    model.write().save(path)
    loaded = GBTRegressionModel.load(path)
    assert loaded.getObjective() == objective
    np.testing.assert_array_equal(loaded.transform(df).toPandas()["prediction"],
                                  out["prediction"])
    served = sparkxml_kernels.load_model(path)
    np.testing.assert_allclose(served.predict(pdf[COLS].to_numpy()), out["prediction"],
                               rtol=1e-12)
    np.testing.assert_allclose(served.predict_raw(pdf[COLS].to_numpy()),
                               np.log(out["prediction"]) if log_link else out["prediction"],
                               rtol=1e-10, atol=1e-12)
    # the training metric is the objective's own, recorded every round
    metric = {"squared_error": "rmse", "absolute_error": "mae", "quantile": "quantile@0.8",
              "poisson": "poisson-nloglik", "tweedie": "tweedie-nloglik@1.4",
              "gamma": "gamma-nloglik", "cox": "cox-nloglik"}[objective]
    hist = model.summary.trainingHistory
    assert model.summary.metricName == metric
    assert len(hist) == 15 and hist[-1] < hist[0]


@pytest.mark.parametrize("objective", ["absolute_error", "cox"])
def test_same_model_on_one_and_two_workers(spark, objective):
    """The leaf quantiles and Cox's risk sets span every worker's rows exactly."""
    df = spark.createDataFrame(_data(objective, seed=2))
    preds = [GBTRegressor(objective=objective, numWorkers=k, **PARAMS).fit(df)
             .transform(df).toPandas()["prediction"].to_numpy() for k in (1, 2)]
    np.testing.assert_allclose(preds[0], preds[1], rtol=1e-10)


def test_mllib_loss_type_alias_and_pipeline(spark, tmp_path):
    pdf = _data("absolute_error")
    df = spark.createDataFrame(pdf)
    a = GBTRegressor(lossType="absolute", **PARAMS).fit(df).transform(df).toPandas()
    b = GBTRegressor(objective="absolute_error", **PARAMS).fit(df).transform(df).toPandas()
    np.testing.assert_array_equal(a["prediction"], b["prediction"])
    pm = Pipeline(stages=[GBTRegressor(objective="huber", huberDelta=0.5, **PARAMS)]).fit(df)
    pm.write().save(str(tmp_path / "pipe"))
    again = PipelineModel.load(str(tmp_path / "pipe"))
    np.testing.assert_array_equal(again.transform(df).toPandas()["prediction"],
                                  pm.transform(df).toPandas()["prediction"])
    assert again.stages[0].getHuberDelta() == 0.5
    with pytest.raises(ValueError, match="lossType 'squared' means objective 'squared_error'"):
        GBTRegressor(lossType="squared", objective="poisson", **PARAMS).fit(df)


def test_metrics_history_and_evaluate_each_iteration(spark, tmp_path):
    pdf = _data("poisson")
    df = spark.createDataFrame(pdf.assign(v=np.arange(len(pdf)) % 4 == 0))
    model = GBTRegressor(objective="poisson", validationIndicatorCol="v",
                         earlyStoppingRounds=5, evalMetric="gamma-deviance",
                         **dict(PARAMS, maxIter=30)).fit(df)
    losses = model.evaluateEachIteration(df.filter("v"))
    assert len(losses) == model.getNumTrees and losses[-1] < losses[0]
    every = GBTRegressor(objective="poisson", validationIndicatorCol="v",
                         evalMetrics=["tweedie-nloglik@1.2", "poisson-nloglik"],
                         **PARAMS).fit(df)
    mh = every.summary.metricHistory
    assert list(mh) == ["tweedie-nloglik@1.2", "poisson-nloglik"]
    assert every.summary.metricName == "tweedie-nloglik@1.2"
    assert all(len(v["train"]) == len(v["validation"]) == 15 for v in mh.values())
    assert mh["poisson-nloglik"]["validation"][-1] < mh["poisson-nloglik"]["validation"][0]
    every.write().save(str(tmp_path / "every"))
    assert GBTRegressionModel.load(str(tmp_path / "every")).summary.metricHistory == mh
    with pytest.raises(ValueError, match="evalMetric 'mae' does not apply to objective "
                                         "'poisson'"):
        GBTRegressor(objective="poisson", evalMetrics=["poisson-nloglik", "mae"], **PARAMS)\
            .fit(df)
    with pytest.raises(ValueError, match="evalMetric 'rmse' does not apply to objective "
                                         "'poisson'"):
        GBTRegressor(objective="poisson", evalMetric="rmse", **PARAMS).fit(df)
    q = GBTRegressor(objective="quantile", quantileAlpha=0.9, **PARAMS).fit(df)
    pinball = q.evaluateEachIteration(df)
    y, p = pdf["label"].to_numpy(), q.transform(df).toPandas()["prediction"].to_numpy()
    d = y - p
    assert pinball[-1] == pytest.approx(np.mean(np.maximum(0.9 * d, -0.1 * d)), rel=1e-9)


@pytest.mark.parametrize("objective,label,message", [
    ("poisson", -1.0, "labelCol: column 'label' holds the value -1.0; objective 'poisson' "
                      "needs labels >= 0"),
    ("tweedie", -2.5, "holds the value -2.5; objective 'tweedie' needs labels >= 0"),
    ("gamma", 0.0, "holds the value 0.0; objective 'gamma' needs labels > 0"),
])
def test_labels_the_objective_refuses(spark, objective, label, message):
    pdf = _data("poisson")
    pdf.loc[17, "label"] = label
    df = spark.createDataFrame(pdf)
    with pytest.raises(ValueError, match=message):
        GBTRegressor(objective=objective, **PARAMS).fit(df)


@pytest.mark.parametrize("params,message", [
    ({"objective": "quantile", "quantileAlpha": 1.0}, r"quantileAlpha=1.0 is invalid: must be "
                                                       r"in \(0.0, 1.0\)"),
    ({"objective": "quantile", "quantileAlpha": 0.0}, r"quantileAlpha=0.0 is invalid"),
    ({"objective": "tweedie", "tweedieVariancePower": 2.0}, "tweedieVariancePower=2.0 is "
                                                            "invalid"),
    ({"objective": "huber", "huberDelta": 0.0}, "huberDelta=0.0 is invalid"),
    ({"objective": "logistic"}, "objective='logistic' is invalid"),
    ({"objective": "poisson", "baseScore": 0.0}, "baseScore must be > 0, got 0.0"),
    ({"maxDeltaStep": -1.0}, "maxDeltaStep=-1.0 is invalid"),
    ({"objective": "cox", "validationIndicatorCol": "v"}, "objective 'cox' has no validation "
                                                          "metric"),
    ({"evalMetrics": ["mae", "nope"]}, "evalMetrics=.* is invalid"),
])
def test_bad_params(spark, params, message):
    df = spark.createDataFrame(_data("poisson", n=50).assign(v=False))
    with pytest.raises(ValueError, match=message):
        GBTRegressor(**dict(PARAMS, **params)).fit(df)
