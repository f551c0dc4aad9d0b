"""FM, GBFM and FieldEncoder on local Spark: worker-count invariance, persistence, Pipelines,
CrossValidator, the JVM-free loaders and input errors."""
import os

import numpy as np
import pytest
from _data import data_path
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.evaluation import BinaryClassificationEvaluator, RegressionEvaluator
from pyspark.ml.linalg import Vectors
from pyspark.ml.tuning import CrossValidator, ParamGridBuilder
from pyspark.sql import functions as F
from scipy.stats import norm

import sparkxml_kernels
from sparkxml import (
    FieldEncoder,
    FMClassifier,
    FMRegressor,
    GBFMClassifier,
    GBFMRegressor,
    GBTRegressor,
)
from sparkxml.datasets import from_csr
from sparkxml.fm.fields import FieldEncoderModel
from sparkxml.fm.fm import FMClassificationModel
from sparkxml.fm.gbfm import GBFMRegressionModel
from sparkxml.synthetic import make_ratings
from sparkxml_kernels.persist import ModelFormatError

A9A_FIELDS = [0, 5, 13, 18, 34, 39, 46, 60, 66, 71, 73, 75, 77, 82]


@pytest.fixture(scope="module")
def a9a(spark):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(data_path("a9a", "a9a"), n_features=123)
    X, y = X[:4000], (y[:4000] > 0).astype(float)
    df = from_csr(spark, X.indptr, X.indices, X.data, 123, columns={"label": y})
    return X, y, df


@pytest.fixture(scope="module")
def ratings(spark):
    cols, rating, planted = make_ratings(4000, n_users=60, n_items=40, seed=2)
    rows = [tuple(int(cols[c][i]) for c in cols) + (float(rating[i]),)
            for i in range(len(rating))]
    df = spark.createDataFrame(rows, list(cols) + ["rating"])
    return df.withColumn("isVal", F.col("user") % 5 == 0), list(cols), planted


def _same_arrays(a, b):
    """Two fitted models hold the same arrays, bit for bit."""
    x, y = a.predictor.to_arrays(), b.predictor.to_arrays()
    assert sorted(x) == sorted(y)
    for key in x:
        np.testing.assert_array_equal(x[key], y[key], err_msg=key)


def _probs(model, df):
    return np.array([r[0][1] for r in model.transform(df).select("probability").collect()])


def test_fm_same_model_for_any_workers_and_partitioning(a9a, tmp_path):
    X, y, df = a9a
    est = FMClassifier(maxIter=15, burnIn=3, seed=3)
    one = est.copy({est.numWorkers: 1}).fit(df.repartition(3))
    two = est.copy({est.numWorkers: 2}).fit(df)
    assert [i["world_size"] for i in two.summary.workerInfo] == [2, 2]
    assert two.summary.numBlocks == 14  # a9a's 14 one-hot attributes, found from the data
    a, b = one.predictor, two.predictor
    assert a.n_samples == b.n_samples == 12
    for key in ("w0", "w", "V"):  # the same chain, bit for bit (sums in a fixed order)
        np.testing.assert_array_equal(getattr(b, key), getattr(a, key))
    p1, p2 = _probs(one, df), _probs(two, df)
    np.testing.assert_array_equal(p1, p2)
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(y, p1) > 0.88
    # numBins=0: no down-sampling of the ROC curve, so the area is exact
    auc = BinaryClassificationEvaluator(numBins=0).evaluate(two.transform(df))
    assert abs(auc - roc_auc_score(y, p2)) < 1e-6  # rawPrediction orders rows as probability

    # persistence: Spark load, JVM-free load, overwrite, and a corrupt directory
    path = str(tmp_path / "fm")
    two.write().save(path)
    two.write().overwrite().save(path)
    loaded = FMClassificationModel.load(path)
    np.testing.assert_array_equal(_probs(loaded, df), p2)
    np.testing.assert_allclose(sparkxml_kernels.load_model(path).predict_proba(X)[:, 1], p2,
                               rtol=0, atol=1e-12)
    assert loaded.summary.history["alpha"] == two.summary.history["alpha"]
    for f in os.listdir(os.path.join(path, "data")):
        if f.endswith(".parquet"):
            os.remove(os.path.join(path, "data", f))
    with pytest.raises(ModelFormatError, match="no parquet file"):
        FMClassificationModel.load(path)


def test_fm_input_errors(spark, a9a):
    X, y, df = a9a
    small = df.limit(50)
    with pytest.raises(ValueError, match="holds the label 2.0"):
        FMClassifier(maxIter=2, burnIn=0).fit(small.withColumn("label", F.lit(2.0)))
    nan = spark.createDataFrame([(Vectors.sparse(3, [1], [float("nan")]), 1.0)],
                                ["features", "label"])
    with pytest.raises(ValueError, match="featuresCol: column 'features' holds the value nan"):
        FMRegressor(maxIter=2, burnIn=0).fit(nan)
    mixed = spark.createDataFrame([(Vectors.sparse(3, [1], [1.0]), 1.0),
                                   (Vectors.sparse(4, [1], [1.0]), 0.0)], ["features", "label"])
    with pytest.raises(ValueError, match="different sizes: 3 and 4"):
        FMRegressor(maxIter=2, burnIn=0).fit(mixed)
    with pytest.raises(ValueError, match="does not fit the vectors"):
        GBFMClassifier(fieldStarts=[0, 60, 123]).fit(small)
    with pytest.raises(ValueError, match="fieldStarts is required"):
        GBFMClassifier().fit(small)
    with pytest.raises(ValueError, match="invalid"):
        GBFMClassifier(fieldStarts=[5, 60]).fit(small)
    with pytest.raises(ValueError, match="weightCol is not supported by solver 'mcmc'"):
        FMClassifier(weightCol="label", maxIter=2, burnIn=0).fit(small)
    with pytest.raises(ValueError, match="burnIn=5 must be below maxIter=3"):
        FMClassifier(maxIter=3).fit(small)
    with pytest.raises(ValueError, match="burnIn=5 must be below jointIter=5"):
        GBFMClassifier(fieldStarts=[0, 60], jointIter=5).fit(small)
    with pytest.raises(ValueError, match="weightCol is not supported with jointFit='mcmc'"):
        GBFMClassifier(fieldStarts=[0, 60], weightCol="label").fit(small)
    with pytest.raises(ValueError, match="jointFit"):
        GBFMRegressor(fieldStarts=[0, 60], jointFit="als").fit(small)
    with pytest.raises(ValueError, match="labelCol: column 'nope' is not in"):
        FMRegressor(labelCol="nope").fit(small)
    with pytest.raises(ValueError, match="param solver='sgd' is invalid"):
        FMRegressor(solver="sgd").fit(small)


def test_fm_pipeline_cross_validation_and_field_encoder(spark, ratings, tmp_path):
    df, cols, _ = ratings
    enc = FieldEncoder(inputCols=cols)
    fm = FMRegressor(labelCol="rating", solver="als", factorSize=4, maxIter=10, numWorkers=2)
    pipe = Pipeline(stages=[enc, fm]).fit(df)
    enc_model, fm_model = pipe.stages
    assert enc_model.fieldStarts == [0, 60, 100, 106, 116, 124]
    rmse = RegressionEvaluator(labelCol="rating").evaluate(pipe.transform(df))
    assert rmse < 0.5
    path = str(tmp_path / "pipe")
    pipe.write().save(path)
    again = PipelineModel.load(path)
    a = pipe.transform(df).select("prediction").collect()
    assert again.transform(df).select("prediction").collect() == a
    # the encoder without Spark encodes as its transform does
    voc = sparkxml_kernels.load_model(os.path.join(path, "stages", sorted(os.listdir(
        os.path.join(path, "stages")))[0]))
    # one collect gives both sides the same rows (two sorted-and-limited queries may break
    # ties between rows equal on the sort keys differently)
    rows = enc_model.transform(df.orderBy(*cols).limit(20)).select(*cols, "features").collect()
    ip, ix, _, _ = voc.encode([np.array([r[c] for r in rows], dtype=np.int64) for c in cols])
    assert [list(r["features"].indices) for r in rows] == [ix[ip[i]:ip[i + 1]].tolist()
                                                          for i in range(20)]
    # CrossValidator over the ALS regularisation (fits inside each fold)
    data = enc_model.transform(df)
    grid = ParamGridBuilder().addGrid(fm.regParam, [1e-3, 1.0]).build()
    cv = CrossValidator(estimator=fm.copy({fm.maxIter: 4}), estimatorParamMaps=grid,
                        evaluator=RegressionEvaluator(labelCol="rating"), numFolds=2,
                        seed=1).fit(data)
    assert cv.avgMetrics[0] < cv.avgMetrics[1]  # strong L2 underfits the ratings

    # handleInvalid: unseen categories and nulls
    new = spark.createDataFrame([(999, 1, 0, 0, 0, 0, 3.0), (None, 1, 0, 0, 0, 0, 3.0)],
                                cols + ["rating"])
    kept = enc_model.transform(new).collect()
    assert [len(r["features"].indices) for r in kept] == [5, 5]
    assert enc_model.copy({enc_model.handleInvalid: "skip"}).transform(new).count() == 0
    with pytest.raises(Exception, match="set handleInvalid to 'keep' or 'skip'"):
        enc_model.copy({enc_model.handleInvalid: "error"}).transform(new).collect()
    epath = str(tmp_path / "enc")
    enc_model.write().save(epath)
    assert FieldEncoderModel.load(epath).categories("age") == enc_model.categories("age")


def test_gbfm_stages_validation_and_persistence(spark, ratings, tmp_path):
    df, cols, planted = ratings
    enc = FieldEncoder(inputCols=cols).fit(df)
    data = enc.transform(df)
    est = GBFMRegressor(labelCol="rating", fieldStarts=enc.fieldStarts, numStages=25,
                        factorSize=4, numWorkers=2, validationIndicatorCol="isVal",
                        earlyStoppingRounds=3, jointFit="none")
    model = est.fit(data)
    _same_arrays(est.copy({est.numWorkers: 1}).fit(data.repartition(3)), model)
    hist = model.summary.history
    assert len(hist["valid_metric"]) == hist["stages_run"]
    assert len(model.stages) == int(np.argmin(hist["valid_metric"])) + 1
    first = {frozenset((cols[s["fields"][0]], cols[s["fields"][1]])) for s in model.stages[:4]}
    assert first <= {frozenset(p) for p in planted}, model.stages[:4]
    assert all(s["gain"] > 0 for s in model.stages[:4])
    path = str(tmp_path / "gbfm")
    model.write().save(path)
    loaded = GBFMRegressionModel.load(path)
    a = model.transform(data).select("prediction").collect()
    assert loaded.transform(data).select("prediction").collect() == a
    assert loaded.stages == model.stages
    Xp = enc.vocabulary.encode([np.asarray(df.select(c).toPandas()[c]) for c in cols])
    got = sparkxml_kernels.load_model(path).predict((Xp[0], Xp[1], Xp[2], enc.numFeatures))
    np.testing.assert_allclose(got, [r[0] for r in a], rtol=1e-12)
    # classification: probability / rawPrediction columns, and a vector of the wrong size
    lab = data.withColumn("label", (F.col("rating") > 3.5).cast("double"))
    clf_est = GBFMClassifier(fieldStarts=enc.fieldStarts, numStages=5, numWorkers=1,
                             jointIter=12, burnIn=2)
    clf = clf_est.fit(lab)  # the joint fit (probit) by default
    _same_arrays(clf_est.copy({clf_est.numWorkers: 2}).fit(lab.repartition(4)), clf)
    assert len({frozenset(s["fields"]) for s in clf.stages}) == len(clf.stages)
    assert clf.summary.history["joint_samples"] == 10
    out = clf.transform(lab).select("rawPrediction", "probability", "prediction").first()
    p = out["probability"][1]
    assert abs(out["rawPrediction"][1] - norm.ppf(p)) < 1e-7
    assert out["prediction"] == float(p > 0.5)
    cpath = str(tmp_path / "gbfm_clf")
    clf.write().save(cpath)
    got = sparkxml_kernels.load_model(cpath).predict_proba((Xp[0], Xp[1], Xp[2],
                                                          enc.numFeatures))
    want = [r[0][1] for r in clf.transform(data).select("probability").collect()]
    np.testing.assert_allclose(got[:, 1], want, rtol=1e-12)
    wrong = spark.createDataFrame([(Vectors.sparse(3, [0], [1.0]),)], ["features"])
    with pytest.raises(Exception, match="size 3, expected 128"):
        clf.transform(wrong).collect()


def test_fm_early_stopping_warm_start_and_progress(spark, ratings, tmp_path, caplog):
    import logging

    df, cols, _ = ratings
    data = FieldEncoder(inputCols=cols).fit(df).transform(df).cache()
    caplog.set_level(logging.INFO, logger="sparkxml")
    est = FMRegressor(labelCol="rating", solver="als", factorSize=4, maxIter=40, regParam=1e-5,
                      validationIndicatorCol="isVal", earlyStoppingRounds=2, numWorkers=1,
                      verbose=1)
    model = est.fit(data)
    h = model.summary.history
    curve, best = h["valid_metric"], h["best_iteration"]
    assert len(curve) == best + 3 < 40  # stopped two sweeps after the best one
    val = data.filter("isVal")
    rmse = RegressionEvaluator(labelCol="rating").evaluate(model.transform(val))
    assert rmse == pytest.approx(curve[best], rel=1e-5)  # the best sweep's model
    lines = [r.getMessage() for r in caplog.records if "valid_metric=" in r.getMessage()]
    assert len(lines) == len(curve), lines[:3]  # one line a sweep, with the validation RMSE

    # warm start from the fitted model and from its saved path: the objective starts where
    # the first fit ended, not where a fresh fit starts
    path = str(tmp_path / "fm_init")
    model.write().save(path)
    for init in (model, path):
        more = FMRegressor(labelCol="rating", solver="als", factorSize=4, maxIter=2,
                           regParam=1e-5, numWorkers=1, initModel=init).fit(data)
        assert more.summary.history["objective"][0] < h["objective"][0] / 2
    with pytest.raises(ValueError, match="initModel: the model has .* factorSize 4; this fit "
                                         "has .* factorSize 3"):
        FMRegressor(labelCol="rating", factorSize=3, maxIter=2, burnIn=0,
                    initModel=model).fit(data)
    with pytest.raises(ValueError, match="initModel: the model is a regression model"):
        FMClassifier(maxIter=2, burnIn=0, initModel=path).fit(
            data.withColumn("label", (F.col("rating") > 3).cast("double")))
    with pytest.raises(ValueError, match="earlyStoppingRounds=2 needs validationIndicatorCol"):
        FMRegressor(labelCol="rating", earlyStoppingRounds=2).fit(data)
    with pytest.raises(TypeError, match="initModel must be a saved FM model"):
        FMRegressor(initModel=3)
    # a model of the other family, fitted or saved, is refused by name
    with pytest.raises(ValueError, match="initModel: a FMRegressionModel is not a model of "
                                         "the GBT engine"):
        GBTRegressor(labelCol="rating", maxIter=2, initModel=model).fit(data)
    with pytest.raises(ValueError, match="fm_init is not a model of the GBT engine"):
        GBTRegressor(labelCol="rating", maxIter=2, initModel=path).fit(data)
    gbt_path = str(tmp_path / "gbt_init")
    GBTRegressor(labelCol="rating", maxIter=2, maxDepth=2, numWorkers=1).fit(data).write() \
        .save(gbt_path)
    with pytest.raises(ValueError, match="gbt_init is not a saved FM model"):
        FMRegressor(labelCol="rating", maxIter=2, burnIn=0, initModel=gbt_path).fit(data)
